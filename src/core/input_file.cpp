#include "core/input_file.hpp"

#include <sys/stat.h>

#include "core/error.hpp"
#include "core/text.hpp"

namespace gpuscale {

void check_input_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(path + ": no such file");
  if (!S_ISREG(st.st_mode)) throw InputError(path + ": is " + file_kind(st.st_mode) + ", not a " + what);
}

}  // namespace gpuscale
