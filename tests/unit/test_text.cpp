// Text helpers: durations of any size, and text from files made safe to print
// (escaped control characters and bytes that are not UTF-8) or to put in CSV.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/text.hpp"

using namespace gpuscale;

TEST_CASE("a duration past 1000 h is written as such, never as a wrapped number", "[text]") {
  CHECK(format_duration(999 * 3600.0) == "999 h 00 min");
  CHECK(format_duration(1000 * 3600.0) == "1000 h 00 min");
  CHECK(format_duration(1000 * 3600.0 + 1) == "more than 1000 h");
  CHECK(format_duration(1e30) == "more than 1000 h");
  CHECK(format_duration(INFINITY) == "more than 1000 h");
  CHECK(about_duration(200.7) == "about 3 min 20 s");
  CHECK(about_duration(1e300) == "more than 1000 h");
}

TEST_CASE("format_number keeps every word of a long text around its number", "[text]") {
  const std::string words(200, 'x');
  CHECK(format_number(("%.2f " + words).c_str(), 1.5) == "1.50 " + words);
  CHECK(format_number("%.2f GB/s", 1.5) == "1.50 GB/s");
}

TEST_CASE("printable escapes control characters and bytes that are not UTF-8", "[text]") {
  CHECK(printable("gemm-512 size=64") == "gemm-512 size=64");
  const std::string utf8 = "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x9a\x80";  // é ✓ 🚀
  CHECK(printable(utf8) == utf8);
  CHECK(printable(std::string("a\0x", 3)) == "a\\x00x");
  CHECK(printable("\x1b[31mred\r\n\t\x7f") == "\\x1b[31mred\\x0d\\x0a\\x09\\x7f");
  CHECK(printable("a\xc2\x9b" "b") == "a\\u009bb");  // C1 CSI
  CHECK(printable("\xff\xfe") == "\\xff\\xfe");
  CHECK(printable("\xc3") == "\\xc3");                    // cut short
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");           // overlong '/'
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
  CHECK(printable("line 1\nline 2\x1b", "\n") == "line 1\nline 2\\x1b");
}

TEST_CASE("text_problem names the first control character or byte that is not UTF-8", "[text]") {
  CHECK(text_problem("").empty());
  CHECK(text_problem("gemm \xc3\xa9").empty());
  CHECK(text_problem(std::string("a\0x", 3)) == "a control character (U+0000) at byte 2");
  CHECK(text_problem("ab\x1b") == "a control character (U+001B) at byte 3");
  CHECK(text_problem("\x7f") == "a control character (U+007F) at byte 1");
  CHECK(text_problem("x\xc2\x85") == "a control character (U+0085) at byte 2");
  CHECK(text_problem("ok\xff") == "a byte that is not UTF-8 (\\xff) at byte 3");
}

TEST_CASE("csv fields are quoted as RFC 4180 needs, other control characters escaped", "[text]") {
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("plain", true) == "\"plain\"");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("two\r\nlines") == "\"two\r\nlines\"");
  CHECK(csv_field("bell\x07 esc\x1b") == "bell\\x07 esc\\x1b");
  CHECK(csv_field(std::string("a\0b", 3)) == "a\\x00b");
}
