//! The Signatures form for a delivery a receiver refused with 401.
//!
//! earshot holds the event's exact bytes (the observer's copy) but not the
//! header the platform sent that receiver: the observer's copy carries the
//! observer subscription's signature, which only the observer's secret
//! verifies. So that header is not put in the form (the Inbox's capture of
//! the very request is: it is the receiver's own); the form asks the
//! receiver instead (`p`, [`SigsEffect::AskReceiver`]): the bytes signed
//! with the secret in the form (and the previous one), then a wrong one.
//!
//! Owns the handover's target, loading the event's bytes when the handing
//! pane had none (Deliveries, Health: [`SigsEffect::LoadRefused`]), and the
//! receiver's verdict, kept with the event and subscription it was
//! computed for and shown only beside them.

use std::convert::Infallible;

use earshot_core::history::refused_delivery::Checked;
use earshot_core::redact::SecretString;

use super::Outcome;
use super::tasks::SigsEffect;
use super::{LoadedBody, SignaturesPane};
use crate::tui::kernel::RefusedDelivery as Refused;
use crate::tui::panes::subscriptions::short_id;
use tui_input::Input;

/// The refused delivery in the form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RefusedForm {
    pub(crate) target: Refused,
    /// The event whose bytes are in the body field, once known.
    pub(crate) event_id: Option<String>,
    /// Why there are no bytes to ask the receiver with.
    pub(crate) missing: Option<String>,
}

/// What the store holds for a refused delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Located {
    Event {
        event_id: String,
        body: Vec<u8>,
    },
    /// No bytes, and why (the observer never filed the event, …).
    Missing(String),
}

/// A receiver's answers, with what they were computed for.
#[derive(Clone, Debug)]
pub(crate) struct Asked {
    pub(crate) event_id: String,
    pub(crate) subscription_id: String,
    /// When the answers came (Unix ms).
    pub(crate) at_ms: i64,
    pub(crate) result: Result<Checked, String>,
}

/// The body field while the observer's copy stands for it.
fn copy_source(event_id: &str, len: usize) -> String {
    format!("<the observer's copy of event {event_id}, {len} bytes>")
}

impl SignaturesPane {
    /// Takes a refused delivery over (the form is already empty): the
    /// bytes handed over, if any, and a read of the store for the event
    /// when the handing pane does not know it.
    pub(super) fn open_refused(
        &mut self,
        target: Refused,
        body: Option<Vec<u8>>,
        out: &mut Outcome,
    ) {
        let handed = body.is_some();
        if let Some(bytes) = body {
            let source = match &target.event_id {
                Some(event_id) => copy_source(event_id, bytes.len()),
                None => format!("<delivery body, {} bytes>", bytes.len()),
            };
            self.body = Input::new(source.clone());
            self.read.set(Some(LoadedBody {
                source,
                result: Ok(bytes),
            }));
        }
        if target.event_id.is_none() {
            if !handed {
                self.body = Input::new(
                    "<the observer's copy of the refused event: reading the store…>".to_owned(),
                );
            }
            out.effects.push(SigsEffect::LoadRefused {
                seq: self.read.start(),
                target: target.clone(),
            });
        }
        self.refused = Some(RefusedForm {
            event_id: target.event_id.clone(),
            target,
            missing: None,
        });
    }

    /// The store answered which event the refused delivery was (bytes
    /// handed over stay: they are the same bytes).
    pub(super) fn on_refused_loaded(
        &mut self,
        seq: u64,
        result: Result<Located, String>,
        out: &mut Outcome,
    ) {
        if !self.read.is_current(seq) {
            return;
        }
        let Some(form) = self.refused.as_mut() else {
            return;
        };
        let handed = self.read.value().is_some();
        let located = result.unwrap_or_else(|error| {
            Located::Missing(format!("the store could not be read: {error}"))
        });
        match located {
            Located::Event { event_id, body } => {
                form.event_id = Some(event_id.clone());
                form.missing = None;
                if handed {
                    self.read
                        .finish_with(seq, Ok::<_, Infallible>(()), |_, ()| {});
                } else {
                    let source = copy_source(&event_id, body.len());
                    self.body = Input::new(source.clone());
                    let loaded = LoadedBody {
                        source,
                        result: Ok(body),
                    };
                    self.read.finish(seq, Ok::<_, Infallible>(Some(loaded)));
                }
            }
            Located::Missing(why) => {
                if !handed {
                    self.body = Input::default();
                }
                out.toast = Some(why.clone());
                form.missing = Some(why);
                self.read
                    .finish_with(seq, Ok::<_, Infallible>(()), |_, ()| {});
            }
        }
        self.recheck();
    }

    /// `p`: asks the receiver about the loaded event with the secrets in
    /// the form.
    pub(super) fn ask_receiver(&mut self, out: &mut Outcome) {
        let Some(form) = &self.refused else {
            out.toast = Some(
                "asking a receiver is for a delivery it refused with 401: press s on one in \
                 Events, Deliveries or Health"
                    .into(),
            );
            return;
        };
        let Some(event_id) = form.event_id.clone() else {
            out.toast = Some(form.missing.clone().unwrap_or_else(|| {
                "the observer's copy of the event is still being read".to_owned()
            }));
            return;
        };
        // The secret typed, else the one the console was started with.
        let given = match self.current.value() {
            "" => match (self.env_secret)() {
                Some(secret) => {
                    out.toast = Some("asked with EARSHOT_WEBHOOK_SECRET (nothing typed)".into());
                    secret
                }
                None => {
                    out.toast = Some(
                        "earshot needs a secret to ask with: type the subscription's (or the one \
                         you think the receiver holds) in the current secret field, or start the \
                         console with EARSHOT_WEBHOOK_SECRET set; for the observer's own \
                         subscription it is in the file `earshot observer setup` wrote \
                         (observer.secret in the state directory)"
                            .into(),
                    );
                    return;
                }
            },
            typed => SecretString::new(typed),
        };
        let second = Some(self.previous.value())
            .filter(|value| !value.is_empty())
            .map(SecretString::new);
        out.effects.push(SigsEffect::AskReceiver {
            seq: self.probe.start(),
            event_id,
            subscription_id: form.target.subscription_id.clone(),
            given,
            second,
        });
        // The keyboard stays in the form: the next thing an operator does
        // is try another secret, and a secret typed into a pane that lost
        // the keyboard would run the pane's keys.
    }

    /// The receiver answered; kept only for the event it was asked about.
    pub(super) fn on_asked(&mut self, seq: u64, asked: Box<Asked>, out: &mut Outcome) {
        if !self.probe.is_current(seq) {
            return;
        }
        if let Err(error) = &asked.result {
            out.toast = Some(format!("the receiver could not be asked: {error}"));
        }
        self.probe.finish(seq, Ok::<_, Infallible>(Some(*asked)));
    }

    /// The receiver's verdict, only when it was computed for the event and
    /// subscription now in the form.
    pub(crate) fn shown_verdict(&self) -> Option<&Asked> {
        let form = self.refused.as_ref()?;
        let asked = self.probe.value().as_ref()?;
        (Some(&asked.event_id) == form.event_id.as_ref()
            && asked.subscription_id == form.target.subscription_id)
            .then_some(asked)
    }

    /// A receiver is being asked.
    pub(crate) fn asking(&self) -> bool {
        self.probe.loading()
    }

    /// What the check area says for a refused delivery before any header
    /// is in the form.
    pub(crate) fn refused_note(&self) -> Option<String> {
        let form = self.refused.as_ref()?;
        let short = short_id(&form.target.subscription_id);
        if let Some(why) = &form.missing {
            return Some(why.clone());
        }
        Some(format!(
            "subscription {short}'s receiver refused this delivery with 401. earshot holds the \
             event's exact bytes (the observer's copy) but not the header the platform sent \
             that receiver — the observer's copy was signed with the observer's own secret, so \
             comparing it proves nothing. Type a secret (the subscription's, or the one you \
             think the receiver holds; a second one in previous) and press p (enter while typing): earshot sends \
             the receiver these bytes signed with it, then with a wrong one (a duplicate \
             event_id, which it deduplicates), and says which secret it holds."
        ))
    }
}
