// The validation gate: every published case group must stay within its stated tolerance.
#include <doctest/doctest.h>

#include "validate/published.h"

using namespace stratasim;

TEST_CASE("validate: published cases load from the data compiled into the binary") {
  const auto cases = load_published_cases();
  CHECK(cases.size() == 31 + 24);
}

TEST_CASE("validate: every group is within its tolerance") {
  const ValidationReport r = validate_published(load_published_cases());
  for (const GroupSummary& g : r.groups) {
    CAPTURE(g.group);
    CAPTURE(g.rule);
    CAPTURE(g.mape);
    CAPTURE(g.max_abs_error);
    CHECK(g.within_tolerance);
  }
  for (const CaseResult& c : r.cases) {
    CAPTURE(c.id);
    CHECK(c.failure.empty());
  }
}
