//! The API token: where it comes from and how it is kept out of every log line, error and
//! Event. [`Token`] has no `Display`, and its `Debug` prints a fixed mask; only
//! [`Token::expose`] gives the text, for the `Authorization` header.

use std::path::{Path, PathBuf};

/// A secret token. Cloning is cheap; formatting never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(std::sync::Arc<str>);

impl Token {
    pub fn new(text: &str) -> Option<Token> {
        let t = text.trim();
        (!t.is_empty()).then(|| Token(t.into()))
    }

    /// The token itself: only for building the `Authorization` header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(***)")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("no API token: set CLOUDSCALE_ACCESS_TOKEN or --token-file")]
    Missing,
    #[error("cannot read the token file {path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("the token file {0} is empty")]
    EmptyFile(PathBuf),
}

/// Where the token comes from. A file is read on every request (a few bytes, next to an
/// HTTPS round trip), so a rotated Secret takes effect at once, without a restart, however
/// the file was replaced.
#[derive(Debug)]
pub enum TokenSource {
    Static(Token),
    File(PathBuf),
}

impl TokenSource {
    pub fn from_file(path: &Path) -> Result<TokenSource, TokenError> {
        let source = TokenSource::File(path.to_path_buf());
        source.current()?;
        Ok(source)
    }

    /// `--token-file` if given, else `CLOUDSCALE_ACCESS_TOKEN`.
    pub fn from_env_or_file(
        file: Option<&Path>,
        env: Option<String>,
    ) -> Result<TokenSource, TokenError> {
        match file {
            Some(p) => Self::from_file(p),
            None => env
                .as_deref()
                .and_then(Token::new)
                .map(TokenSource::Static)
                .ok_or(TokenError::Missing),
        }
    }

    /// The token to use now.
    pub fn current(&self) -> Result<Token, TokenError> {
        match self {
            TokenSource::Static(t) => Ok(t.clone()),
            TokenSource::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| TokenError::File {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                Token::new(&text).ok_or_else(|| TokenError::EmptyFile(path.clone()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_token() {
        let t = Token::new("s3cr3t-value").expect("token");
        assert_eq!(format!("{t:?}"), "Token(***)");
        let src = TokenSource::Static(t);
        assert!(!format!("{src:?}").contains("s3cr3t"));
    }

    #[test]
    fn blank_tokens_are_missing() {
        assert!(Token::new("  \n").is_none());
        assert!(matches!(
            TokenSource::from_env_or_file(None, Some(" ".into())),
            Err(TokenError::Missing)
        ));
        assert!(matches!(
            TokenSource::from_env_or_file(None, None),
            Err(TokenError::Missing)
        ));
    }

    #[test]
    fn a_rotated_file_is_read_again() {
        let dir = std::env::temp_dir().join(format!("ccm-token-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("token");
        std::fs::write(&path, "first\n").expect("write");
        let src = TokenSource::from_file(&path).expect("source");
        assert_eq!(src.current().expect("t").expose(), "first");
        std::fs::write(&path, "secnd\n").expect("rotate, same length");
        assert_eq!(src.current().expect("t").expose(), "secnd");
        std::fs::write(&path, "").expect("empty");
        assert!(matches!(src.current(), Err(TokenError::EmptyFile(_))));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(matches!(src.current(), Err(TokenError::File { .. })));
    }
}
