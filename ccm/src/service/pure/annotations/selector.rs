//! Label selectors (the grammar of k8s.io/apimachinery/pkg/labels), for the node-selector
//! annotation.

use super::*;

/// A parsed Kubernetes label selector: requirements ANDed; empty matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

/// One requirement of a [`Selector`]. `values` are sorted and distinct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `k=v`
    Equals,
    /// `k==v`
    DoubleEquals,
    /// `k!=v`
    NotEquals,
    /// `k in (a,b)`
    In,
    /// `k notin (a,b)`
    NotIn,
    /// `k`
    Exists,
    /// `!k`
    DoesNotExist,
    /// `k>5`
    GreaterThan,
    /// `k<5`
    LessThan,
}

impl Selector {
    /// Parses the string form (`a=b,c!=d`, `k in (x,y)`, `k notin (x)`, `k`, `!k`, `k>1`,
    /// `k<1`); blank selects everything. The error is the parser's reason.
    pub fn parse(s: &str) -> Result<Self, String> {
        let tokens = lex(s)?;
        let mut p = SelectorParser { tokens, pos: 0 };
        let mut requirements = p.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements })
    }

    /// Whether the selector has no requirements (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether a label set satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl Requirement {
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        let contains = |v: &String| self.values.iter().any(|x| x == v);
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => value.is_some_and(contains),
            Operator::NotEquals | Operator::NotIn => !value.is_some_and(contains),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(have), Some(want)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self.values.first().map(String::as_str).unwrap_or_default();
        match self.operator {
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::Equals => write!(f, "{}={first}", self.key),
            Operator::DoubleEquals => write!(f, "{}=={first}", self.key),
            Operator::NotEquals => write!(f, "{}!={first}", self.key),
            Operator::GreaterThan => write!(f, "{}>{first}", self.key),
            Operator::LessThan => write!(f, "{}<{first}", self.key),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Ident,
    In,
    NotIn,
    Bang,
    NotEquals,
    Equals,
    DoubleEquals,
    Gt,
    Lt,
    Open,
    Close,
    Comma,
    End,
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn symbol(s: &str) -> Option<Tok> {
    Some(match s {
        "!" => Tok::Bang,
        "!=" => Tok::NotEquals,
        "=" => Tok::Equals,
        "==" => Tok::DoubleEquals,
        ">" => Tok::Gt,
        "<" => Tok::Lt,
        "(" => Tok::Open,
        ")" => Tok::Close,
        "," => Tok::Comma,
        _ => return None,
    })
}

fn lex(s: &str) -> Result<Vec<(Tok, String)>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    loop {
        while i < chars.len() && matches!(chars[i], ' ' | '\t' | '\r' | '\n') {
            i += 1;
        }
        let Some(&c) = chars.get(i) else {
            out.push((Tok::End, String::new()));
            return Ok(out);
        };
        if is_special(c) {
            // Longest known operator (the lexer of apimachinery).
            let mut buf = String::new();
            let mut last: Option<(Tok, String, usize)> = None;
            let mut j = i;
            while let Some(&c) = chars.get(j) {
                if !is_special(c) {
                    break;
                }
                buf.push(c);
                j += 1;
                if let Some(t) = symbol(&buf) {
                    last = Some((t, buf.clone(), j));
                } else if last.is_some() {
                    break;
                }
            }
            match last {
                Some((t, lit, end)) => {
                    out.push((t, lit));
                    i = end;
                }
                None => return Err(format!("unexpected symbol '{buf}'")),
            }
        } else {
            let start = i;
            while i < chars.len()
                && !is_special(chars[i])
                && !matches!(chars[i], ' ' | '\t' | '\r' | '\n')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let tok = match word.as_str() {
                "in" => Tok::In,
                "notin" => Tok::NotIn,
                _ => Tok::Ident,
            };
            out.push((tok, word));
        }
    }
}

struct SelectorParser {
    tokens: Vec<(Tok, String)>,
    pos: usize,
}

fn describe(tok: Tok, lit: &str) -> String {
    if tok == Tok::End {
        "end of string".to_string()
    } else {
        format!("'{lit}'")
    }
}

impl SelectorParser {
    /// The next token; with `values`, keywords read as identifiers.
    fn peek(&self, values: bool) -> (Tok, String) {
        let (t, lit) = self
            .tokens
            .get(self.pos)
            .cloned()
            .unwrap_or((Tok::End, String::new()));
        if values && matches!(t, Tok::In | Tok::NotIn) {
            (Tok::Ident, lit)
        } else {
            (t, lit)
        }
    }

    fn next(&mut self, values: bool) -> (Tok, String) {
        let t = self.peek(values);
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut out = Vec::new();
        loop {
            let (t, lit) = self.peek(true);
            match t {
                Tok::Ident | Tok::Bang => {
                    out.push(self.requirement()?);
                    let (t, lit) = self.next(true);
                    match t {
                        Tok::End => return Ok(out),
                        Tok::Comma => {
                            let (t2, l2) = self.peek(true);
                            if !matches!(t2, Tok::Ident | Tok::Bang) {
                                return Err(format!(
                                    "found {}, expected: identifier after ','",
                                    describe(t2, &l2)
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found {}, expected: ',' or end of string",
                                describe(t, &lit)
                            ));
                        }
                    }
                }
                Tok::End => return Ok(out),
                _ => {
                    return Err(format!(
                        "found {}, expected: !, identifier, or end of string",
                        describe(t, &lit)
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (mut t, mut key) = self.next(true);
        let mut operator = None;
        if t == Tok::Bang {
            operator = Some(Operator::DoesNotExist);
            (t, key) = self.next(true);
        }
        if t != Tok::Ident {
            return Err(format!("found {}, expected: identifier", describe(t, &key)));
        }
        if !is_qualified_name(&key) {
            return Err(format!(
                "invalid label key {key:?}: must be a name of at most 63 characters \
                 (alphanumerics, '-', '_', '.'; starting and ending alphanumeric), optionally \
                 prefixed by a DNS subdomain and '/'"
            ));
        }
        if operator.is_none() && matches!(self.peek(true).0, Tok::End | Tok::Comma) {
            operator = Some(Operator::Exists);
        }
        if let Some(op) = operator {
            return Ok(Requirement {
                key,
                operator: op,
                values: Vec::new(),
            });
        }
        let (t, lit) = self.next(false);
        let op = match t {
            Tok::In => Operator::In,
            Tok::NotIn => Operator::NotIn,
            Tok::Equals => Operator::Equals,
            Tok::DoubleEquals => Operator::DoubleEquals,
            Tok::NotEquals => Operator::NotEquals,
            Tok::Gt => Operator::GreaterThan,
            Tok::Lt => Operator::LessThan,
            _ => {
                return Err(format!(
                    "found {}, expected: in, notin, =, ==, !=, >, <",
                    describe(t, &lit)
                ));
            }
        };
        let values = match op {
            Operator::In | Operator::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        for v in &values {
            if !(v.is_empty() || is_label_name(v)) {
                return Err(format!(
                    "invalid label value {v:?}: must be empty or at most 63 characters \
                     (alphanumerics, '-', '_', '.'; starting and ending alphanumeric)"
                ));
            }
        }
        if matches!(op, Operator::GreaterThan | Operator::LessThan)
            && values.iter().any(|v| v.parse::<i64>().is_err())
        {
            return Err(format!(
                "for '>' and '<' the value must be an integer, found {:?}",
                values.first().map(String::as_str).unwrap_or_default()
            ));
        }
        Ok(Requirement {
            key,
            operator: op,
            values: values.into_iter().collect(),
        })
    }

    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (t, _) = self.peek(true);
        if matches!(t, Tok::End | Tok::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        match self.next(true) {
            (Tok::Ident, lit) => Ok(BTreeSet::from([lit])),
            (t, lit) => Err(format!("found {}, expected: identifier", describe(t, &lit))),
        }
    }

    fn set_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (t, lit) = self.next(true);
        if t != Tok::Open {
            return Err(format!("found {}, expected: '('", describe(t, &lit)));
        }
        let (t, lit) = self.peek(true);
        match t {
            Tok::Ident | Tok::Comma => {
                let set = self.identifier_list()?;
                let (t, lit) = self.next(true);
                if t != Tok::Close {
                    return Err(format!("found {}, expected: ')'", describe(t, &lit)));
                }
                Ok(set)
            }
            Tok::Close => {
                self.next(true);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!(
                "found {}, expected: ',', ')' or identifier",
                describe(t, &lit)
            )),
        }
    }

    fn identifier_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            let (t, lit) = self.next(true);
            match t {
                Tok::Ident => {
                    set.insert(lit);
                    let (t2, l2) = self.peek(true);
                    match t2 {
                        Tok::Comma => {}
                        Tok::Close => return Ok(set),
                        _ => {
                            return Err(format!(
                                "found {}, expected: ',' or ')'",
                                describe(t2, &l2)
                            ));
                        }
                    }
                }
                Tok::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    match self.peek(true).0 {
                        Tok::Close => {
                            set.insert(String::new());
                            return Ok(set);
                        }
                        Tok::Comma => {
                            self.next(true);
                            set.insert(String::new());
                        }
                        _ => {}
                    }
                }
                _ => {
                    return Err(format!(
                        "found {}, expected: ',' or identifier",
                        describe(t, &lit)
                    ));
                }
            }
        }
    }
}

/// A label name: 1-63 characters of `[A-Za-z0-9_.-]`, alphanumeric at both ends.
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// RFC 1123 subdomain as Kubernetes checks it: at most 253 characters, dot-separated
/// non-empty labels of `[a-z0-9-]`, alphanumeric at both ends.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b.first().is_some_and(|c| *c != b'-')
                && b.last().is_some_and(|c| *c != b'-')
        })
}

/// A label key: `[prefix/]name`, prefix a DNS subdomain.
fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        None => is_label_name(s),
        Some((prefix, name)) => {
            !name.contains('/') && is_dns1123_subdomain(prefix) && is_label_name(name)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------
