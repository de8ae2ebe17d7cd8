// The message of the InputError a call throws: tests check what it names (file, JSON path,
// value, rule). A call that throws nothing, or something else, fails the test.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "sim/core/error.h"

namespace stratasim::testing {

template <typename F>
std::string input_error_message(F&& call) {
  try {
    call();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("no InputError was thrown");
  return {};
}

}  // namespace stratasim::testing
