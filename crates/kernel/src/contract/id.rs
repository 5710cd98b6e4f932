//! Versioned contract ids: `name@N`, the name lower-case and the version a positive integer.

use std::fmt;

/// A parsed `name@N` contract id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContractId {
    pub name: String,
    pub version: u32,
}

/// Why a string is not a versioned contract id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a versioned contract id (expected `name@N`, e.g. `prompt.segment@1`)")]
pub struct ContractIdError(pub String);

impl ContractId {
    /// Parses `^[a-z][a-z0-9.-]*@[1-9][0-9]*$`.
    pub fn parse(text: &str) -> Result<ContractId, ContractIdError> {
        let bad = || ContractIdError(text.to_string());
        let (name, version) = text.split_once('@').ok_or_else(bad)?;
        let mut chars = name.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
        let rest_ok =
            chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-');
        let version_ok = version.starts_with(|c: char| ('1'..='9').contains(&c))
            && version.chars().all(|c| c.is_ascii_digit());
        if !(first_ok && rest_ok && version_ok) {
            return Err(bad());
        }
        let version = version.parse().map_err(|_| bad())?;
        Ok(ContractId {
            name: name.to_string(),
            version,
        })
    }
}

impl fmt::Display for ContractId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.name, self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_versioned_ids_and_rejects_the_rest() {
        assert!(ContractId::parse("prompt.segment@1").is_ok());
        assert!(ContractId::parse("world-ir.vocabulary@12").is_ok());
        for bad in [
            "prompt.segment",
            "Prompt@1",
            "a@0",
            "a@01",
            "@1",
            "a@1x",
            "1a@1",
            "a b@1",
        ] {
            assert!(ContractId::parse(bad).is_err(), "{bad} should be rejected");
        }
    }
}
