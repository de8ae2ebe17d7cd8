// JSON views of search results: candidates and results as written by `stratasim search --json`
// and `stratasim batch --search`, and the compact shard form that MPI ranks send to rank 0
// (counts and candidate indices; rank 0 re-evaluates the few indices it receives).
#pragma once

#include "sim/core/json_reader.h"
#include "sim/search/search.h"

namespace stratasim {

Json candidate_json(const Candidate& c, const SearchOptions& o, const HardwareModel& hw);

// {"space", "points", "feasible", "pruned", "objective", "top", "pareto"}; no wall time, so the
// same search gives the same bytes however it was spread over threads or ranks.
Json search_result_json(const SearchResult& r, const SearchSpace& space, const SearchOptions& o,
                        const HardwareModel& hw);

// {"points", "feasible", "pruned", "top": [index...], "pareto": [index...], "seconds"}.
Json search_shard_json(const SearchResult& r);
// The inverse: candidates are rebuilt with evaluate_index() on the same inputs.
SearchResult search_shard_from_json(const Json& j, const ModelSpec& model, const Strategy& base,
                                    const HardwareModel& hw, const SearchSpace& space,
                                    const SearchOptions& options);

}  // namespace stratasim
