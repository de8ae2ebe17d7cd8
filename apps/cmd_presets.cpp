#include <cstdio>

#include "apps/cli_args.h"
#include "apps/commands.h"
#include "apps/report.h"
#include "hardware_models/src/hardware_json.h"
#include "strategies/model/model_json.h"

namespace stratasim {

int cmd_presets(int argc, char** argv) {
  parse_cli(argc, argv, 2, "presets");
  std::printf("models:\n");
  for (const std::string& name : model_preset_names()) {
    std::printf("  %s\n", describe_model(model_preset(name)).c_str());
  }
  std::printf("devices:\n");
  for (const std::string& name : catalog_names(CatalogKind::kDevice)) std::printf("  %s\n", name.c_str());
  std::printf("links:\n");
  for (const std::string& name : catalog_names(CatalogKind::kLink)) std::printf("  %s\n", name.c_str());
  std::printf("clusters:\n");
  for (const std::string& name : catalog_names(CatalogKind::kCluster)) {
    std::printf("  %s\n", describe_cluster(catalog_cluster(name)).c_str());
  }
  return 0;
}

}  // namespace stratasim
