// Writes a whole file so that readers see either the old or the new content, never half:
// write to "<path>.tmp.<pid>", flush, fsync, rename over <path>.
#pragma once

#include <string>
#include <string_view>

namespace stratasim {

// Throws InputError naming the path when the file cannot be written.
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace stratasim
