// Bounds on a config before the TOML parser sees it (core/config_shape.hpp).
#include "core/config_shape.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <vector>

#include "core/error.hpp"
#include "core/text.hpp"

namespace gpuscale {

namespace {

// One pass over the text: strings and comments skipped, the arrays and inline
// tables open at each point counted, and the parts of each key (at the start
// of a line outside any value, in a [table] header, after '{' or ',' in an
// inline table). Not a parser: what it misreads, toml++ reports afterwards.
class ShapeScan {
 public:
  ShapeScan(const std::string& text, const std::string& source, bool with_position)
      : t_(text), source_(source), with_position_(with_position) {}

  void run() {
    bool key_next = true;  // a key (or a [table] header) may start here
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '\n' || c == ' ' || c == '\t' || c == '\r') {
        key_next = key_next || (c == '\n' && open_.empty());
        step();
      } else if (c == '#') {
        while (i_ < t_.size() && t_[i_] != '\n') step();
      } else if (key_next) {
        key_next = false;
        if (c == '[' && open_.empty()) {
          header();
        } else {
          key('=');
        }
      } else if (c == '"' || c == '\'') {
        skip_string();
      } else {
        key_next = value_char(c);
        step();
      }
    }
  }

 private:
  // A bracket, brace or comma of a value (or any other character of one):
  // whether a key of an inline table follows.
  bool value_char(char c) {
    if (c == '[' || c == '{') {
      open_.push_back(c);
      if (open_.size() > kMaxNesting) {
        fail(i_, "values nested more than " + std::to_string(kMaxNesting) +
                     " deep (arrays and inline tables inside one another; a config needs two or three)");
      }
      return c == '{';
    }
    if ((c == ']' || c == '}') && !open_.empty()) open_.pop_back();
    return c == ',' && !open_.empty() && open_.back() == '{';
  }

  // "[a.b]" or "[[a.b]]": its parts, up to the closing bracket(s).
  void header() {
    step();
    if (i_ < t_.size() && t_[i_] == '[') step();
    key(']');
  }

  // A bare, quoted or dotted key: counts its parts and stops after `end`, or
  // before anything that cannot be part of a key.
  void key(char end) {
    const std::size_t begin = i_;
    std::size_t parts = 1;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\'') {
        skip_string();
      } else if (c == '.') {
        if (++parts > kMaxKeyParts) {
          fail(begin, "a key of more than " + std::to_string(kMaxKeyParts) +
                          " dotted parts (a config's keys have one or two, e.g. [experiment.expect])");
        }
        step();
      } else if (c == ' ' || c == '\t' || std::isalnum(u) || c == '_' || c == '-' || u >= 0x80) {
        step();
      } else {
        if (c != end) return;
        step();
        if (end == ']' && i_ < t_.size() && t_[i_] == ']') step();
        return;
      }
    }
  }

  // From a quote to past the string's end: basic or literal, on one line or on several.
  void skip_string() {
    const char q = t_[i_];
    const std::string three(3, q);
    const bool multiline = t_.compare(i_, 3, three) == 0;
    for (std::size_t k = 0; k < (multiline ? 3 : 1); ++k) step();
    while (i_ < t_.size() && (multiline || t_[i_] != '\n')) {
      if (q == '"' && t_[i_] == '\\') {  // an escape: the next character is not the end
        step();
        if (i_ < t_.size() && (multiline || t_[i_] != '\n')) step();
      } else if (multiline && t_.compare(i_, 3, three) == 0) {
        while (i_ < t_.size() && t_[i_] == q) step();  // a closing quote run may hold two of the string's own
        return;
      } else if (!multiline && t_[i_] == q) {
        step();
        return;
      } else {
        step();
      }
    }
  }

  void step() {
    if (t_[i_] == '\n') {
      ++line_;
      line_start_ = i_ + 1;
    }
    ++i_;
  }

  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    if (!with_position_) throw InputError(source_ + ": " + what);
    std::size_t column = 1;  // in characters, as toml++ counts them
    for (std::size_t k = line_start_; k < at && k < t_.size(); ++k) {
      column += (static_cast<unsigned char>(t_[k]) & 0xC0) != 0x80;
    }
    throw InputError(source_ + ":" + std::to_string(line_) + ":" + std::to_string(column) + ": " + what);
  }

  const std::string& t_;
  const std::string& source_;
  const bool with_position_;
  std::size_t i_ = 0, line_ = 1, line_start_ = 0;
  std::vector<char> open_;  // '[' or '{' of each value open here
};

std::string too_large(const std::string& source, const std::string& what) {
  return source + ": " + what + "; a config may hold at most " + std::to_string(kMaxConfigBytes) + " bytes (1 MiB)";
}

// The checks of a file's kind and size, on stat()'s or fstat()'s answer.
void check_file(const std::string& path, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) {
    throw InputError(path + ": is " + file_kind(st.st_mode) + ", not a config file (a TOML file)");
  }
  if (static_cast<std::size_t>(st.st_size) > kMaxConfigBytes) {
    throw InputError(too_large(path, "the file is " + std::to_string(st.st_size) + " bytes"));
  }
}

}  // namespace

void check_config_shape(const std::string& text, const std::string& source, bool with_position) {
  if (text.size() > kMaxConfigBytes) {
    throw InputError(too_large(source, "the text is " + std::to_string(text.size()) + " bytes"));
  }
  ShapeScan(text, source, with_position).run();
}

std::string read_config_file(const std::string& path) {
  const std::string unreadable = path + ": cannot read the file (does it exist?)";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(unreadable);
  check_file(path, st);  // before opening: opening a FIFO waits for a writer
  // Non-blocking, and checked again once open, in case the path changed in between.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(unreadable);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0) throw InputError(unreadable);
  check_file(path, st);
  std::string text(kMaxConfigBytes + 1, '\0');  // one byte more tells a file that grew past the limit
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, &text[got], text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(unreadable);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > kMaxConfigBytes) throw InputError(too_large(path, "the file grew while it was read"));
  text.resize(got);
  return text;
}

}  // namespace gpuscale
