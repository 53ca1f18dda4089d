//! Colour depth: detected once from `COLORTERM` / `TERM`, and the
//! nearest-colour mappings from truecolor down to xterm-256 and the 16
//! ANSI colours.

use ratatui::style::Color;

/// How many colours the terminal shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ColorDepth {
    TrueColor,
    Indexed256,
    Ansi16,
}

impl ColorDepth {
    /// `COLORTERM` truecolor/24bit, else `TERM` containing `256color`, else 16.
    pub(crate) fn detect(env: &dyn Fn(&str) -> Option<String>) -> ColorDepth {
        let colorterm = env("COLORTERM").unwrap_or_default().to_ascii_lowercase();
        if colorterm.contains("truecolor") || colorterm.contains("24bit") {
            ColorDepth::TrueColor
        } else if env("TERM").is_some_and(|term| term.contains("256color")) {
            ColorDepth::Indexed256
        } else {
            ColorDepth::Ansi16
        }
    }

    /// `color` as this terminal can show it.
    pub(crate) fn map(self, color: Color) -> Color {
        match (self, color) {
            (ColorDepth::TrueColor, _) => color,
            (ColorDepth::Indexed256, Color::Rgb(r, g, b)) => Color::Indexed(nearest_256(r, g, b)),
            (ColorDepth::Ansi16, Color::Rgb(r, g, b)) => nearest_16(r, g, b),
            (ColorDepth::Ansi16, Color::Indexed(index)) => {
                let (r, g, b) = xterm_rgb(index);
                nearest_16(r, g, b)
            }
            _ => color,
        }
    }
}

fn distance((r1, g1, b1): (u8, u8, u8), (r2, g2, b2): (u8, u8, u8)) -> u32 {
    let d = |a: u8, b: u8| u32::from(a.abs_diff(b)).pow(2);
    d(r1, r2) + d(g1, g2) + d(b1, b2)
}

const CUBE_LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];

/// The xterm-256 index nearest to an RGB colour (colour cube or grey ramp;
/// the first 16 are left alone because terminals redefine them).
pub(crate) fn nearest_256(r: u8, g: u8, b: u8) -> u8 {
    let level = |v: u8| -> usize {
        CUBE_LEVELS
            .iter()
            .enumerate()
            .min_by_key(|(_, level)| v.abs_diff(**level))
            .map_or(0, |(index, _)| index)
    };
    let (ri, gi, bi) = (level(r), level(g), level(b));
    let cube = (CUBE_LEVELS[ri], CUBE_LEVELS[gi], CUBE_LEVELS[bi]);
    let cube_index = 16 + 36 * ri + 6 * gi + bi;
    let average = (u32::from(r) + u32::from(g) + u32::from(b)) / 3;
    let grey_step = (average.saturating_sub(8) / 10).min(23);
    let grey_value = u8::try_from(8 + 10 * grey_step).unwrap_or(238);
    let grey = (grey_value, grey_value, grey_value);
    let grey_index = 232 + grey_step as usize;
    let chosen = if distance((r, g, b), grey) < distance((r, g, b), cube) {
        grey_index
    } else {
        cube_index
    };
    u8::try_from(chosen).unwrap_or(15)
}

/// The xterm default palette's RGB value of an index.
fn xterm_rgb(index: u8) -> (u8, u8, u8) {
    match index {
        0..=15 => ANSI_16[usize::from(index)].1,
        16..=231 => {
            let i = usize::from(index - 16);
            (
                CUBE_LEVELS[i / 36],
                CUBE_LEVELS[(i / 6) % 6],
                CUBE_LEVELS[i % 6],
            )
        }
        _ => {
            let v = 8 + 10 * (index - 232);
            (v, v, v)
        }
    }
}

/// The 16 ANSI colours with xterm's default RGB values.
const ANSI_16: [(Color, (u8, u8, u8)); 16] = [
    (Color::Black, (0, 0, 0)),
    (Color::Red, (205, 0, 0)),
    (Color::Green, (0, 205, 0)),
    (Color::Yellow, (205, 205, 0)),
    (Color::Blue, (0, 0, 238)),
    (Color::Magenta, (205, 0, 205)),
    (Color::Cyan, (0, 205, 205)),
    (Color::Gray, (229, 229, 229)),
    (Color::DarkGray, (127, 127, 127)),
    (Color::LightRed, (255, 0, 0)),
    (Color::LightGreen, (0, 255, 0)),
    (Color::LightYellow, (255, 255, 0)),
    (Color::LightBlue, (92, 92, 255)),
    (Color::LightMagenta, (255, 0, 255)),
    (Color::LightCyan, (0, 255, 255)),
    (Color::White, (255, 255, 255)),
];

/// The ANSI colour nearest to an RGB colour.
pub(crate) fn nearest_16(r: u8, g: u8, b: u8) -> Color {
    ANSI_16
        .iter()
        .min_by_key(|(_, rgb)| distance((r, g, b), *rgb))
        .map_or(Color::Reset, |(color, _)| *color)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::theme::tests::env_of;

    #[test]
    fn colour_depth_is_detected_from_colorterm_then_term() {
        let depth = |pairs| ColorDepth::detect(&env_of(pairs));
        assert_eq!(depth(&[("COLORTERM", "truecolor")]), ColorDepth::TrueColor);
        assert_eq!(depth(&[("COLORTERM", "24bit")]), ColorDepth::TrueColor);
        assert_eq!(depth(&[("TERM", "xterm-256color")]), ColorDepth::Indexed256);
        assert_eq!(depth(&[("TERM", "screen")]), ColorDepth::Ansi16);
        assert_eq!(depth(&[]), ColorDepth::Ansi16);
    }

    #[test]
    fn truecolor_maps_to_the_nearest_xterm_256_entry() {
        assert_eq!(nearest_256(0, 0, 0), 16);
        assert_eq!(nearest_256(255, 255, 255), 231);
        assert_eq!(nearest_256(255, 0, 0), 196);
        assert_eq!(nearest_256(0x5f, 0xaf, 0xff), 75);
        // Greys land on the grey ramp.
        assert_eq!(nearest_256(0x80, 0x80, 0x80), 244);
        assert_eq!(nearest_256(0x30, 0x30, 0x30), 236);
        for index in 16..=255u8 {
            let (r, g, b) = xterm_rgb(index);
            assert_eq!(xterm_rgb(nearest_256(r, g, b)), (r, g, b), "index {index}");
        }
    }

    #[test]
    fn truecolor_maps_to_the_nearest_ansi_colour() {
        assert_eq!(nearest_16(250, 10, 10), Color::LightRed);
        assert_eq!(nearest_16(190, 0, 0), Color::Red);
        assert_eq!(nearest_16(10, 10, 10), Color::Black);
        assert_eq!(nearest_16(130, 130, 130), Color::DarkGray);
        assert_eq!(ColorDepth::Ansi16.map(Color::Indexed(196)), Color::LightRed);
        assert_eq!(ColorDepth::Ansi16.map(Color::Green), Color::Green);
    }
}
