//! Themes: the colour and modifier of each semantic role, loaded from TOML.
//!
//! Owns: the built-in themes (`themes/*.toml`, embedded), user themes from
//! `<config dir>/themes/NAME.toml` (a partial file merges over the built-in
//! of the same name, else over `default`), `NO_COLOR` (selects `mono`
//! unless `--theme` names one), and the resolved [`Theme`] the views draw
//! with. The terminal's colour depth, detected once, and the mapping of
//! truecolor values down to 256 or 16 colours are in `depth.rs`.
//!
//! Decisions: a broken or unknown theme never stops the console; it falls
//! back and says so (the notice shows in the status bar). At 16 colours the
//! selection is drawn reversed, because a dark selection colour maps to
//! black and would vanish.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};

mod depth;
pub(crate) use depth::ColorDepth;
use serde::Deserialize;

/// Built-in themes, by name.
pub(crate) const BUILT_IN: [(&str, &str); 4] = [
    ("default", include_str!("../../../themes/default.toml")),
    ("light", include_str!("../../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../../themes/high-contrast.toml"),
    ),
    ("mono", include_str!("../../../themes/mono.toml")),
];

/// A semantic role: what a piece of text means, not which widget draws it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Role {
    Fg,
    Accent,
    Ok,
    Warn,
    Error,
    Muted,
    Border,
}

/// One theme file as written: every key optional, so a file can override
/// only what it wants.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThemeFile {
    pub(crate) fg: Option<String>,
    pub(crate) bg: Option<String>,
    pub(crate) accent: Option<String>,
    pub(crate) ok: Option<String>,
    pub(crate) warn: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) muted: Option<String>,
    pub(crate) selection: Option<String>,
    pub(crate) border: Option<String>,
    #[serde(default)]
    pub(crate) modifiers: BTreeMap<String, Vec<String>>,
}

const MODIFIER_KEYS: [&str; 10] = [
    "fg",
    "bg",
    "accent",
    "ok",
    "warn",
    "error",
    "muted",
    "selection",
    "border",
    "status",
];

impl ThemeFile {
    pub(crate) fn parse(text: &str) -> Result<ThemeFile, String> {
        let file: ThemeFile = toml::from_str(text).map_err(|error| error.to_string())?;
        for (key, names) in &file.modifiers {
            if !MODIFIER_KEYS.contains(&key.as_str()) {
                return Err(format!(
                    "unknown role `{key}` in [modifiers]; roles: {}",
                    MODIFIER_KEYS.join(", ")
                ));
            }
            for name in names {
                parse_modifier(name)?;
            }
        }
        for (key, value) in file.colours() {
            if let Some(value) = value {
                parse_colour(value).map_err(|error| format!("`{key}`: {error}"))?;
            }
        }
        Ok(file)
    }

    fn colours(&self) -> [(&'static str, Option<&String>); 9] {
        [
            ("fg", self.fg.as_ref()),
            ("bg", self.bg.as_ref()),
            ("accent", self.accent.as_ref()),
            ("ok", self.ok.as_ref()),
            ("warn", self.warn.as_ref()),
            ("error", self.error.as_ref()),
            ("muted", self.muted.as_ref()),
            ("selection", self.selection.as_ref()),
            ("border", self.border.as_ref()),
        ]
    }

    /// `self` with every key `over` sets replaced by `over`'s value.
    pub(crate) fn merge(mut self, over: ThemeFile) -> ThemeFile {
        let pick = |base: &mut Option<String>, new: Option<String>| {
            if new.is_some() {
                *base = new;
            }
        };
        pick(&mut self.fg, over.fg);
        pick(&mut self.bg, over.bg);
        pick(&mut self.accent, over.accent);
        pick(&mut self.ok, over.ok);
        pick(&mut self.warn, over.warn);
        pick(&mut self.error, over.error);
        pick(&mut self.muted, over.muted);
        pick(&mut self.selection, over.selection);
        pick(&mut self.border, over.border);
        self.modifiers.extend(over.modifiers);
        self
    }
}

/// A colour string: `#rrggbb`, a name, an xterm index, or `reset`.
pub(crate) fn parse_colour(text: &str) -> Result<Color, String> {
    Color::from_str(text.trim()).map_err(|_| {
        format!("{text:?} is not a colour; use \"#rrggbb\", a name like \"lightblue\", an index 0-255 or \"reset\"")
    })
}

fn parse_modifier(name: &str) -> Result<Modifier, String> {
    Ok(match name.trim().to_ascii_lowercase().as_str() {
        "bold" => Modifier::BOLD,
        "dim" => Modifier::DIM,
        "italic" => Modifier::ITALIC,
        "underlined" | "underline" => Modifier::UNDERLINED,
        "reversed" | "reverse" => Modifier::REVERSED,
        _ => {
            return Err(format!(
                "unknown modifier {name:?}; use bold, dim, italic, underlined or reversed"
            ));
        }
    })
}

/// A resolved theme: a style per role, ready to draw with.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Theme {
    pub(crate) name: String,
    fg: Color,
    bg: Color,
    accent: Color,
    ok: Color,
    warn: Color,
    error: Color,
    muted: Color,
    selection: Color,
    border: Color,
    modifiers: BTreeMap<String, Modifier>,
    depth: ColorDepth,
}

impl Theme {
    /// A merged theme file resolved for a colour depth.
    pub(crate) fn from_file(
        name: &str,
        file: &ThemeFile,
        depth: ColorDepth,
    ) -> Result<Theme, String> {
        let colour = |key: &str, value: Option<&String>| -> Result<Color, String> {
            match value {
                None => Ok(Color::Reset),
                Some(text) => parse_colour(text)
                    .map(|color| depth.map(color))
                    .map_err(|error| format!("`{key}`: {error}")),
            }
        };
        let mut modifiers = BTreeMap::new();
        for (key, names) in &file.modifiers {
            let mut modifier = Modifier::empty();
            for name in names {
                modifier |= parse_modifier(name)?;
            }
            modifiers.insert(key.clone(), modifier);
        }
        Ok(Theme {
            name: name.to_owned(),
            fg: colour("fg", file.fg.as_ref())?,
            bg: colour("bg", file.bg.as_ref())?,
            accent: colour("accent", file.accent.as_ref())?,
            ok: colour("ok", file.ok.as_ref())?,
            warn: colour("warn", file.warn.as_ref())?,
            error: colour("error", file.error.as_ref())?,
            muted: colour("muted", file.muted.as_ref())?,
            selection: colour("selection", file.selection.as_ref())?,
            border: colour("border", file.border.as_ref())?,
            modifiers,
            depth,
        })
    }

    /// The theme without the colours that carry no meaning, for a thin
    /// link (`--low-bandwidth`): ordinary text, the background and borders
    /// in the terminal's own colours, so a row of text is one run of one
    /// rendition. What the roles mean (accent, ok, warn, error, muted,
    /// the selection) keeps its colour.
    pub(crate) fn without_decoration(mut self) -> Theme {
        self.fg = Color::Reset;
        self.bg = Color::Reset;
        self.border = Color::Reset;
        self
    }

    /// The built-in default theme at full colour (for tests and fallbacks).
    pub(crate) fn fallback() -> Theme {
        let file = ThemeFile::parse(BUILT_IN[0].1).unwrap_or_default();
        Theme::from_file("default", &file, ColorDepth::TrueColor).unwrap_or_else(|_| Theme {
            name: "default".into(),
            fg: Color::Reset,
            bg: Color::Reset,
            accent: Color::Reset,
            ok: Color::Reset,
            warn: Color::Reset,
            error: Color::Reset,
            muted: Color::Reset,
            selection: Color::Reset,
            border: Color::Reset,
            modifiers: BTreeMap::new(),
            depth: ColorDepth::TrueColor,
        })
    }

    fn modifier(&self, key: &str) -> Modifier {
        self.modifiers.get(key).copied().unwrap_or_default()
    }

    /// Ordinary text on the theme's background.
    pub(crate) fn base(&self) -> Style {
        Style::new()
            .fg(self.fg)
            .bg(self.bg)
            .add_modifier(self.modifier("fg"))
    }

    /// Text of a role (foreground and modifiers only, so it composes).
    pub(crate) fn style(&self, role: Role) -> Style {
        let (color, key) = match role {
            Role::Fg => (self.fg, "fg"),
            Role::Accent => (self.accent, "accent"),
            Role::Ok => (self.ok, "ok"),
            Role::Warn => (self.warn, "warn"),
            Role::Error => (self.error, "error"),
            Role::Muted => (self.muted, "muted"),
            Role::Border => (self.border, "border"),
        };
        Style::new().fg(color).add_modifier(self.modifier(key))
    }

    /// The selected row: a background colour, or reverse video where
    /// colour can't carry it (mono themes, 16-colour terminals).
    pub(crate) fn selection(&self) -> Style {
        let modifier = self.modifier("selection");
        if self.depth == ColorDepth::Ansi16 || self.selection == Color::Reset {
            let reversed = if modifier.is_empty() {
                Modifier::REVERSED
            } else {
                modifier
            };
            return Style::new().add_modifier(reversed);
        }
        Style::new().bg(self.selection).add_modifier(modifier)
    }

    /// The status bar.
    pub(crate) fn status(&self) -> Style {
        Style::new()
            .fg(self.fg)
            .add_modifier(self.modifier("status"))
    }
}

/// What to load: the name asked for and where user themes live.
#[derive(Clone, Debug, Default)]
pub(crate) struct ThemeRequest<'a> {
    /// `--theme NAME`; beats `NO_COLOR`.
    pub(crate) name: Option<&'a str>,
    /// `<config dir>/themes`.
    pub(crate) user_dir: Option<&'a Path>,
    /// `NO_COLOR` is set to a non-empty value.
    pub(crate) no_color: bool,
    pub(crate) depth: Option<ColorDepth>,
}

/// A theme and, when something was wrong, what it fell back to and why.
#[derive(Clone, Debug)]
pub(crate) struct LoadedTheme {
    pub(crate) theme: Theme,
    pub(crate) notice: Option<String>,
}

/// `NO_COLOR` set to anything but the empty string.
pub(crate) fn no_color(env: &dyn Fn(&str) -> Option<String>) -> bool {
    env("NO_COLOR").is_some_and(|value| !value.is_empty())
}

/// Resolves a theme: default → built-in of that name → user file of that
/// name, each merging over the last.
pub(crate) fn load(request: &ThemeRequest<'_>) -> LoadedTheme {
    let depth = request.depth.unwrap_or(ColorDepth::TrueColor);
    let name = match (request.name, request.no_color) {
        (Some(name), _) => name,
        (None, true) => "mono",
        (None, false) => "default",
    };
    let built_in = |wanted: &str| {
        BUILT_IN
            .iter()
            .find(|(known, _)| *known == wanted)
            .map(|(_, text)| ThemeFile::parse(text).unwrap_or_default())
    };
    let mut file = built_in("default").unwrap_or_default();
    let mut found = name == "default";
    let mut notice = None;
    if let Some(named) = built_in(name).filter(|_| name != "default") {
        file = file.merge(named);
        found = true;
    }
    if let Some(dir) = request.user_dir {
        let path = dir.join(format!("{name}.toml"));
        match earshot_core::bounded_file::read_to_string(
            &path,
            earshot_core::bounded_file::THEME_FILE,
        ) {
            Ok(text) => match ThemeFile::parse(&text) {
                Ok(user) => {
                    file = file.merge(user);
                    found = true;
                }
                Err(error) => {
                    notice = Some(format!(
                        "theme file {} is invalid ({error}); ignoring it",
                        path.display()
                    ));
                }
            },
            Err(error) if error.is_not_found() => {}
            Err(error) => notice = Some(error.to_string()),
        }
    }
    if !found && notice.is_none() {
        let names: Vec<&str> = BUILT_IN.iter().map(|(name, _)| *name).collect();
        let place = request.user_dir.map_or(String::new(), |dir| {
            format!(" or a {name}.toml in {}", dir.display())
        });
        notice = Some(format!(
            "no theme named {name:?} (built in: {}{place}); using default",
            names.join(", ")
        ));
    }
    let shown_name = if found { name } else { "default" };
    match Theme::from_file(shown_name, &file, depth) {
        Ok(theme) => LoadedTheme { theme, notice },
        Err(error) => LoadedTheme {
            theme: Theme::fallback(),
            notice: Some(format!("theme {name:?}: {error}; using default")),
        },
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An environment made of fixed pairs, for the detection functions.
    pub(crate) fn env_of(
        pairs: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn every_built_in_theme_parses_and_resolves() {
        for (name, text) in BUILT_IN {
            let file = ThemeFile::parse(text).unwrap_or_else(|error| panic!("{name}: {error}"));
            let merged = ThemeFile::parse(BUILT_IN[0].1).unwrap().merge(file);
            Theme::from_file(name, &merged, ColorDepth::TrueColor)
                .unwrap_or_else(|error| panic!("{name}: {error}"));
        }
    }

    #[test]
    fn colours_parse_hex_names_indexes_and_reset() {
        assert_eq!(parse_colour("#ff8000"), Ok(Color::Rgb(255, 128, 0)));
        assert_eq!(parse_colour("lightblue"), Ok(Color::LightBlue));
        assert_eq!(parse_colour("244"), Ok(Color::Indexed(244)));
        assert_eq!(parse_colour("reset"), Ok(Color::Reset));
        assert!(parse_colour("#ff80").unwrap_err().contains("not a colour"));
    }

    #[test]
    fn a_theme_file_rejects_unknown_keys_roles_and_modifiers() {
        assert!(ThemeFile::parse("colour = \"red\"").is_err());
        assert!(
            ThemeFile::parse("[modifiers]\nwidget = [\"bold\"]")
                .unwrap_err()
                .contains("unknown role")
        );
        assert!(
            ThemeFile::parse("[modifiers]\nmuted = [\"blink\"]")
                .unwrap_err()
                .contains("unknown modifier")
        );
        assert!(
            ThemeFile::parse("ok = \"greenish\"")
                .unwrap_err()
                .contains("`ok`")
        );
    }

    #[test]
    fn a_partial_user_theme_merges_over_the_default() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.toml"), "accent = \"#ff0000\"\n").unwrap();
        let loaded = load(&ThemeRequest {
            name: Some("mine"),
            user_dir: Some(dir.path()),
            ..ThemeRequest::default()
        });
        assert_eq!(loaded.notice, None);
        assert_eq!(loaded.theme.name, "mine");
        assert_eq!(
            loaded.theme.style(Role::Accent).fg,
            Some(Color::Rgb(255, 0, 0))
        );
        let default = Theme::fallback();
        assert_eq!(loaded.theme.style(Role::Ok), default.style(Role::Ok));
    }

    #[test]
    fn a_user_file_overrides_a_built_in_of_the_same_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("light.toml"), "error = \"#123456\"\n").unwrap();
        let loaded = load(&ThemeRequest {
            name: Some("light"),
            user_dir: Some(dir.path()),
            ..ThemeRequest::default()
        });
        assert_eq!(
            loaded.theme.style(Role::Error).fg,
            Some(Color::Rgb(0x12, 0x34, 0x56))
        );
        // The rest is light's, not default's.
        assert_eq!(
            loaded.theme.style(Role::Ok).fg,
            Some(Color::Rgb(0, 0x87, 0x5f))
        );
    }

    #[test]
    fn an_unknown_or_broken_theme_falls_back_and_says_why() {
        let unknown = load(&ThemeRequest {
            name: Some("solarised"),
            ..ThemeRequest::default()
        });
        assert_eq!(unknown.theme.name, "default");
        assert!(
            unknown
                .notice
                .unwrap()
                .contains("no theme named \"solarised\"")
        );

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bad.toml"), "fg = \"nope\"\n").unwrap();
        let broken = load(&ThemeRequest {
            name: Some("bad"),
            user_dir: Some(dir.path()),
            ..ThemeRequest::default()
        });
        assert!(broken.notice.unwrap().contains("is invalid"));
        assert_eq!(broken.theme, Theme::fallback());
    }

    #[test]
    fn no_color_selects_mono_unless_a_theme_is_named() {
        assert!(no_color(&env_of(&[("NO_COLOR", "1")])));
        assert!(!no_color(&env_of(&[("NO_COLOR", "")])));
        assert!(!no_color(&env_of(&[])));

        let mono = load(&ThemeRequest {
            no_color: true,
            ..ThemeRequest::default()
        });
        assert_eq!(mono.theme.name, "mono");
        assert_eq!(
            mono.theme.selection(),
            Style::new().add_modifier(Modifier::REVERSED)
        );
        assert!(mono.theme.status().add_modifier.contains(Modifier::BOLD));
        assert_eq!(mono.theme.style(Role::Error).fg, Some(Color::Reset));

        let named = load(&ThemeRequest {
            name: Some("light"),
            no_color: true,
            ..ThemeRequest::default()
        });
        assert_eq!(named.theme.name, "light");
    }

    /// `--low-bandwidth`: text, background and borders in the terminal's
    /// own colours; every role that means something keeps its colour.
    #[test]
    fn without_decoration_keeps_the_colours_that_mean_something() {
        let full = Theme::fallback();
        let plain = full.clone().without_decoration();
        assert_eq!(plain.base().fg, Some(Color::Reset));
        assert_eq!(plain.base().bg, Some(Color::Reset));
        assert_eq!(plain.style(Role::Border).fg, Some(Color::Reset));
        assert_ne!(
            full.style(Role::Fg).fg,
            Some(Color::Reset),
            "the default has a text colour"
        );
        for role in [Role::Accent, Role::Ok, Role::Warn, Role::Error, Role::Muted] {
            assert_eq!(plain.style(role), full.style(role), "{role:?}");
        }
        assert_eq!(plain.selection(), full.selection());
    }

    #[test]
    fn the_selection_stays_visible_at_sixteen_colours() {
        let file = ThemeFile::parse(BUILT_IN[0].1).unwrap();
        let theme = Theme::from_file("default", &file, ColorDepth::Ansi16).unwrap();
        assert_eq!(
            theme.selection(),
            Style::new().add_modifier(Modifier::REVERSED)
        );
        let full = Theme::from_file("default", &file, ColorDepth::TrueColor).unwrap();
        assert_eq!(full.selection().bg, Some(Color::Rgb(0x2f, 0x3d, 0x55)));
    }
}
