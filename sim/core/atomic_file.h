// Writes a whole file so that readers see either the old or the new content, never half: a
// temp file created exclusively (mkstemp) beside the target, flushed, fsynced, renamed over
// it. A symlink writes the file it names; a device, FIFO or socket is written through, never
// replaced; a directory is refused.
#pragma once

#include <string>
#include <string_view>

namespace stratasim {

// Throws InputError naming the path when the file cannot be written.
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace stratasim
