//! Shell words: quoting a word so the shell reads it back unchanged, and splitting a line as
//! the shell splits a simple command (`docs/deployment.md#scripts`).

/// A word as the shell reads it back unchanged: as is when it holds only safe characters, else
/// in single quotes (a `'` inside as `'\''`).
pub fn shell_quote(w: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !w.is_empty() && w.chars().all(safe) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// Words joined by spaces, each [`shell_quote`]d.
pub fn shell_join<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| shell_quote(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A line split into words as a POSIX shell splits a simple command (no expansion: `$X` stays
/// as written): blanks separate words; single quotes keep everything; double quotes keep
/// everything but `\"`, `\\`, `\$` and `` \` ``; a backslash outside quotes escapes the next
/// character (a backslash-newline joins lines). Errors name an unterminated quote.
pub fn shell_words(line: &str) -> Result<Vec<String>, String> {
    split(line, false)
}

/// [`shell_words`] of a command line that may hold several commands: the separators `&&`,
/// `||`, `;`, `|`, `&` and newlines are words of their own (a container's `sh -c "..."`).
pub fn command_words(line: &str) -> Result<Vec<String>, String> {
    split(line, true)
}

fn split(line: &str, separators: bool) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut it = line.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            ';' | '|' | '&' | '\n' if separators => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
                let mut sep = c.to_string();
                if (c == '&' || c == '|') && it.peek() == Some(&c) {
                    sep.push(c);
                    it.next();
                }
                words.push(sep);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match it.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match it.next() {
                        Some('"') => break,
                        Some('\\') => match it.peek() {
                            Some(&n) if "\"\\$`".contains(n) => {
                                cur.push(n);
                                it.next();
                            }
                            Some('\n') => {
                                it.next();
                            }
                            _ => cur.push('\\'),
                        },
                        Some(x) => cur.push(x),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            '\\' => match it.next() {
                Some('\n') | None => {}
                Some(x) => {
                    in_word = true;
                    cur.push(x);
                }
            },
            x => {
                in_word = true;
                cur.push(x);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}
