//! Printing observations a page at a time (`explain` of a namespace or of every
//! namespace), each page written before the next is read, so that the command holds one
//! page, not the cluster. What is printed is what printing the pages whole at once
//! prints, but for a table's columns, which widen from the page that needs it on, as
//! `kubectl get` widens its own between the pages of a long list.

use dispatch_core::{Error, ObjectObs};
use jiff::Timestamp;

use crate::output::{Format, name_lines, write_stdout};
use crate::table::{self, Columns, Layout};

/// Observations printed as their pages come.
pub(crate) struct PagePrinter {
    format: Format,
    layout: Layout,
    columns: Columns,
    now: Timestamp,
    /// How many observations were printed.
    printed: usize,
}

impl PagePrinter {
    /// A printer of pages in `format`; a table gets a NAMESPACE column when `namespaces`.
    pub(crate) fn new(format: Format, namespaces: bool, now: Timestamp) -> PagePrinter {
        let layout = Layout { namespaces, ..Layout::stdout(format == Format::Wide) };
        PagePrinter { format, layout, columns: Columns::fitted(), now, printed: 0 }
    }

    /// Prints one page.
    pub(crate) fn page(&mut self, observations: &[ObjectObs]) -> Result<(), Error> {
        if observations.is_empty() {
            return Ok(());
        }
        let first = self.printed == 0;
        self.printed += observations.len();
        let text = match self.format {
            Format::Table | Format::Wide => {
                let page = table::render_in(observations, self.now, self.layout, &mut self.columns);
                let skip = if first { 0 } else { page.find('\n').map_or(0, |n| n + 1) };
                page[skip..].to_owned()
            }
            Format::Json => {
                let mut text = String::from(if first { "[\n" } else { ",\n" });
                let items: Result<Vec<String>, Error> =
                    observations.iter().map(json_item).collect();
                text.push_str(&items?.join(",\n"));
                text
            }
            Format::Yaml => {
                observations.iter().map(yaml_item).collect::<Result<String, Error>>()?
            }
            Format::Name => name_lines(observations),
        };
        write_stdout(text.as_bytes())
    }

    /// Ends the output: whether anything was printed.
    pub(crate) fn finish(self) -> Result<bool, Error> {
        let end = match (self.format, self.printed) {
            (Format::Json, 0) => "[]\n",
            (Format::Json, _) => "\n]\n",
            (Format::Yaml, 0) => "[]\n",
            _ => "",
        };
        write_stdout(end.as_bytes())?;
        Ok(self.printed > 0)
    }
}

/// One element of a pretty JSON array: its pretty JSON, each line indented two spaces,
/// as `serde_json::to_writer_pretty` writes an element of an array.
fn json_item(o: &ObjectObs) -> Result<String, Error> {
    let text = serde_json::to_string_pretty(o)
        .map_err(|e| Error::invalid(format!("cannot write JSON: {e}")))?;
    Ok(text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n"))
}

/// One element of a YAML sequence, as `serde_yaml_ng` writes an element of one: `- `
/// before its first line, two spaces before the others.
fn yaml_item(o: &ObjectObs) -> Result<String, Error> {
    let text = serde_yaml_ng::to_string(o)
        .map_err(|e| Error::invalid(format!("cannot write YAML: {e}")))?;
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        out.push_str(if i == 0 { "- " } else { "  " });
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The observations of every fixture dump the classifier reads: many shapes, nested
    /// maps and lists, long details.
    fn observations() -> Vec<ObjectObs> {
        let mut all = Vec::new();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dumps");
        for entry in std::fs::read_dir(dir).unwrap().flatten().take(40) {
            let bytes = std::fs::read(entry.path()).unwrap();
            let Ok(snapshot) = dispatch_kf_model::dump::read("dump", &bytes) else { continue };
            let options = dispatch_kf_model::ClassifyOptions {
                mode: dispatch_kf_model::Mode::Plain,
                nodes_readable: true,
                backend: "kf".to_owned(),
                detail: dispatch_kf_model::Detail::WithNotes,
            };
            all.extend(dispatch_kf_model::classify(&snapshot, &options, Timestamp::UNIX_EPOCH));
        }
        assert!(all.len() > 40, "{}", all.len());
        all
    }

    #[test]
    fn an_element_is_written_as_the_whole_list_writes_it() {
        let all = observations();
        let json: String =
            all.iter().map(|o| json_item(o).unwrap()).collect::<Vec<_>>().join(",\n");
        assert_eq!(format!("[\n{json}\n]"), serde_json::to_string_pretty(&all).unwrap());
        let yaml: String = all.iter().map(|o| yaml_item(o).unwrap()).collect();
        assert_eq!(yaml, serde_yaml_ng::to_string(&all).unwrap());
        let none: Vec<ObjectObs> = Vec::new();
        assert_eq!(serde_json::to_string_pretty(&none).unwrap(), "[]");
        assert_eq!(serde_yaml_ng::to_string(&none).unwrap(), "[]\n");
    }
}
