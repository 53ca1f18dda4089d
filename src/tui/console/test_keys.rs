//! Key presses for the `update` tests: one plain key as an [`Action`], and
//! text typed one character at a time.

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

use crate::tui::console::action::{Action, Effect};
use crate::tui::console::app::App;

/// `code` pressed with no modifier.
pub(crate) fn press(code: KeyCode) -> Action {
    Action::Input(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

/// The character `c` pressed.
pub(crate) fn key(c: char) -> Action {
    press(KeyCode::Char(c))
}

/// Types `text` into `app`; the effects of every key, in order.
pub(crate) fn type_text(app: &mut App, text: &str) -> Vec<Effect> {
    text.chars().flat_map(|c| app.update(key(c))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::kernel::ConsoleConfig;

    #[test]
    fn typing_is_one_plain_key_per_character() {
        assert!(matches!(
            key('x'),
            Action::Input(Event::Key(KeyEvent {
                code: KeyCode::Char('x'),
                modifiers: KeyModifiers::NONE,
                ..
            }))
        ));
        let mut app = App::new(ConsoleConfig::default());
        // `?` opens the help overlay and effects nothing.
        assert!(type_text(&mut app, "?").is_empty());
        assert!(app.overlay.is_some());
    }
}
