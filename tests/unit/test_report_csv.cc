// The report's CSV reader on RFC 4180's cases: quoted commas, newlines and quotes, empty cells, CRLF, and errors
// that name the line.
#include <gtest/gtest.h>

#include "replica/core/error.h"
#include "replica/report/csv.h"

namespace replica::report {
namespace {

TEST(ReportCsv, ReadsQuotedFieldsEmptyCellsAndCrlf) {
  const std::string text = "Step,\"a, b\",c\r\n1,,\"say \"\"hi\"\"\"\r\n2,\"two\nlines\",3\n\n4,5,\"\"";
  const std::vector<CsvRow> rows = parse_csv(text, "x.csv");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].fields, (std::vector<std::string>{"Step", "a, b", "c"}));
  EXPECT_EQ(rows[1].fields, (std::vector<std::string>{"1", "", "say \"hi\""}));
  EXPECT_EQ(rows[2].fields, (std::vector<std::string>{"2", "two\nlines", "3"}));
  EXPECT_EQ(rows[2].line, 3);
  EXPECT_EQ(rows[3].fields, (std::vector<std::string>{"4", "5", ""}));
  EXPECT_EQ(rows[3].line, 6);  // after the two-line field and a blank line
}

void expect_csv_error(const std::string& text, const std::string& message) {
  try {
    parse_csv(text, "x.csv");
    ADD_FAILURE() << "no error for: " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(ReportCsv, RefusesStrayQuotesNamingTheLine) {
  expect_csv_error("a,b\n1,x\"y\n", "x.csv:2: a quote inside an unquoted field");
  expect_csv_error("a,b\n\"1\"2,3\n", "x.csv:2: text after a closing quote");
  expect_csv_error("a,b\n1,\"open\n", "x.csv:2: a quoted field is not closed");
}

}  // namespace
}  // namespace replica::report
