//! Provider IDs: `cloudscale://<server uuid>`.

use uuid::Uuid;

pub const SCHEME: &str = "cloudscale";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderIdError {
    #[error("provider ID \"{0}\" has no '://'")]
    NoSeparator(String),
    #[error("provider ID \"{0}\" names no provider")]
    NoProvider(String),
    #[error("provider ID \"{0}\" is not a cloudscale provider ID")]
    Foreign(String),
    #[error("provider ID \"{0}\" has no server ID")]
    NoId(String),
    #[error("provider ID \"{0}\" does not end in a server UUID")]
    NotUuid(String),
}

/// `cloudscale://<uuid>` in lowercase canonical form.
pub fn format(server: Uuid) -> String {
    format!("{SCHEME}://{}", server.hyphenated())
}

/// Parses a provider ID the way the reference does: `<provider>://<uuid>`, spaces around
/// either half ignored, the provider exactly `cloudscale`, the UUID hyphenated or not, any
/// case.
pub fn parse(id: &str) -> Result<Uuid, ProviderIdError> {
    let (provider, rest) = id
        .split_once("://")
        .ok_or_else(|| ProviderIdError::NoSeparator(id.to_string()))?;
    let (provider, rest) = (provider.trim_matches(' '), rest.trim_matches(' '));
    if provider.is_empty() {
        return Err(ProviderIdError::NoProvider(id.to_string()));
    }
    if provider != SCHEME {
        return Err(ProviderIdError::Foreign(id.to_string()));
    }
    if rest.is_empty() {
        return Err(ProviderIdError::NoId(id.to_string()));
    }
    Uuid::parse_str(rest).map_err(|_| ProviderIdError::NotUuid(id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "08d56bfe-40d0-4c68-a915-54f846c28c9e";

    #[test]
    fn accepted_forms() {
        let want = Uuid::parse_str(ID).expect("uuid");
        for s in [
            format!("cloudscale://{ID}"),
            "cloudscale://08d56bfe40d04c68a91554f846c28c9e".to_string(),
            format!("cloudscale://{}", ID.to_uppercase()),
            format!(" cloudscale :// {ID} "),
        ] {
            assert_eq!(parse(&s), Ok(want), "{s}");
        }
        assert_eq!(format(want), format!("cloudscale://{ID}"));
    }

    #[test]
    fn rejected_forms() {
        for s in [
            "cloudscale".to_string(),
            String::new(),
            format!("cloudscale:/{ID}"),
            format!("://{ID}"),
            "cloudscale://".to_string(),
            "cloudscale://foo".to_string(),
            format!("bigcorp://{ID}"),
            format!("cloduscale://{ID}"),
            format!("kind://docker/kind/{ID}"),
        ] {
            assert!(parse(&s).is_err(), "{s:?} must be rejected");
        }
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(matches!(parse("x"), Err(ProviderIdError::NoSeparator(_))));
        assert!(matches!(
            parse(&format!("aws://{ID}")),
            Err(ProviderIdError::Foreign(_))
        ));
        assert!(matches!(
            parse("cloudscale://nope"),
            Err(ProviderIdError::NotUuid(_))
        ));
    }
}
