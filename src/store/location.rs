//! Where a coordinator's database is: a SQLite file (a path) or a PostgreSQL server (a
//! `postgres://` URL). The configuration's `database` is read as one.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A database, as the configuration names it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum Location {
    /// A SQLite file, created if missing.
    Sqlite(PathBuf),
    /// A PostgreSQL database, by connection URL.
    Postgres(String),
}

impl From<String> for Location {
    fn from(text: String) -> Location {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Location::Postgres(text)
        } else {
            Location::Sqlite(PathBuf::from(text))
        }
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Location {
        Location::Sqlite(path.to_path_buf())
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Location {
        Location::Sqlite(path)
    }
}

impl Location {
    /// The SQLite file, if it is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Location::Sqlite(path) => Some(path),
            Location::Postgres(_) => None,
        }
    }
}

/// The location as it may be shown: a URL's password is never printed.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&without_password(url)),
        }
    }
}

/// `url` with the password of its user information, if any, replaced by `***`.
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) if user_info.contains(':') => {
            let user = user_info.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_postgres_and_anything_else_a_file() {
        assert_eq!(
            Location::from("postgres://u@h/db".to_string()),
            Location::Postgres("postgres://u@h/db".into())
        );
        assert_eq!(
            Location::from("data/intentdesk.sqlite".to_string()),
            Location::Sqlite("data/intentdesk.sqlite".into())
        );
    }

    #[test]
    fn a_password_is_never_shown() {
        let shown = Location::Postgres("postgres://app:s3cret@db:5432/intents".into()).to_string();
        assert_eq!(shown, "postgres://app:***@db:5432/intents");
        assert!(!shown.contains("s3cret"));
    }
}
