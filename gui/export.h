// Exports from the window and `stratasim plot`: a widget (chart) as PNG, a table model as CSV,
// a scenario as JSON. Every file is written atomically (sim/core/atomic_file.h): readers see the
// old or the new file, never half of one.
#pragma once

#include <string>

#include "sim/core/json_reader.h"

class QAbstractItemModel;
class QWidget;

namespace stratasim {

// The widget rendered at its current size; throws InputError naming the path on failure.
void save_widget_png(QWidget& widget, const std::string& path);

// One header line, then one line per row of the model as shown (Qt::DisplayRole), fields
// quoted when they hold a comma, a quote or a line break (RFC 4180).
std::string table_csv(const QAbstractItemModel& model);
void save_table_csv(const QAbstractItemModel& model, const std::string& path);

// The document pretty-printed with a final newline.
void save_json(const Json& doc, const std::string& path);

}  // namespace stratasim
