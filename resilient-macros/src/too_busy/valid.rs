//! Checks across `#[too_busy]`'s arguments: none of its rules relates two arguments (each is
//! checked as it is read, see `ast`), so a valid set of arguments is any set of valid ones.

use super::ast::TooBusy;
use crate::driver::{Errors, Given};

/// Every check across `#[too_busy]`'s arguments: there is none to make.
pub(crate) fn validate(_: &TooBusy, _: &Given, _: &mut Errors) {}
