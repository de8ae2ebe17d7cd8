// JSON (de)serialisation of hardware descriptions and the built-in catalog.
//
// A catalog entry is referenced by name ("A100-SXM4-80GB", "nvlink3", "dgx_a100"); the catalog
// files under hardware_models/catalog/ are compiled into the binary so the tool stands alone.
// A scenario may also point at a file ("hardware_models/local.json") or give an inline object.
#pragma once

#include <string>
#include <vector>

#include "hardware_models/src/hardware_model.h"
#include "sim/core/json_reader.h"

namespace stratasim {

DeviceSpec read_device(const JsonNode& node);    // object, or catalog name string
LinkSpec read_link(const JsonNode& node);        // object, or catalog name string
HardwareModel read_cluster(const JsonNode& node);  // object (may name a "preset"), or name

Json to_json(const DeviceSpec& d);
Json to_json(const LinkSpec& l);
Json to_json(const HardwareModel& h);

// Catalog access. Names are case-sensitive; unknown names throw InputError listing the known.
enum class CatalogKind { kDevice, kLink, kCluster };
std::vector<std::string> catalog_names(CatalogKind kind);
DeviceSpec catalog_device(const std::string& name);
LinkSpec catalog_link(const std::string& name);
HardwareModel catalog_cluster(const std::string& name);

}  // namespace stratasim
