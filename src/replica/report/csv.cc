// RFC 4180 CSV, one pass over the text with the quote state as the only state.
#include "replica/report/csv.h"

#include "replica/core/error.h"

namespace replica::report {

std::vector<CsvRow> parse_csv(std::string_view text, const std::string& path) {
  std::vector<CsvRow> rows;
  CsvRow row{.line = 1};
  std::string field;
  int64_t line = 1;
  bool quoted = false;      // inside a quoted field
  bool was_quoted = false;  // the current field was quoted: only a separator or a line end may follow its close
  auto end_field = [&] {
    row.fields.push_back(std::move(field));
    field.clear();
    was_quoted = false;
  };
  auto end_row = [&] {
    end_field();
    const bool blank = row.fields.size() == 1 && row.fields[0].empty();
    if (!blank) rows.push_back(std::move(row));
    row = CsvRow{.line = line + 1};
  };
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        i++;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') line++;
        field += c;
      }
      continue;
    }
    if (c == ',') {
      end_field();
    } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      if (c == '\r') i++;
      end_row();
      line++;
    } else if (c == '"') {
      check(field.empty() && !was_quoted,
            "{}:{}: a quote inside an unquoted field (quote the whole field and double "
            "the quote)",
            path, line);
      quoted = was_quoted = true;
    } else {
      check(!was_quoted, "{}:{}: text after a closing quote (expected a comma or a line end)", path, line);
      field += c;
    }
  }
  check(!quoted, "{}:{}: a quoted field is not closed before the end of the file", path, row.line);
  if (!field.empty() || !row.fields.empty() || was_quoted) end_row();
  return rows;
}

}  // namespace replica::report
