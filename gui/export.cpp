#include "gui/export.h"

#include <QtCore/QAbstractItemModel>
#include <QtCore/QBuffer>
#include <QtGui/QPixmap>
#include <QtWidgets/QWidget>

#include "sim/core/atomic_file.h"
#include "sim/core/error.h"

namespace stratasim {
namespace {

std::string csv_field(const QString& text) {
  std::string s = text.toStdString();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

void save_widget_png(QWidget& widget, const std::string& path) {
  const QPixmap pixmap = widget.grab();
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (pixmap.isNull() || !pixmap.save(&buffer, "PNG")) {
    throw InputError(path + ": the picture could not be encoded as PNG (" +
                     std::to_string(pixmap.width()) + "x" + std::to_string(pixmap.height()) + ")");
  }
  write_file_atomically(path, std::string_view(bytes.constData(), size_t(bytes.size())));
}

std::string table_csv(const QAbstractItemModel& model) {
  std::string out;
  for (int c = 0; c < model.columnCount(); ++c) {
    out += (c ? "," : "") + csv_field(model.headerData(c, Qt::Horizontal).toString());
  }
  out += "\n";
  for (int r = 0; r < model.rowCount(); ++r) {
    for (int c = 0; c < model.columnCount(); ++c) {
      out += (c ? "," : "") + csv_field(model.index(r, c).data().toString());
    }
    out += "\n";
  }
  return out;
}

void save_table_csv(const QAbstractItemModel& model, const std::string& path) {
  write_file_atomically(path, table_csv(model));
}

void save_json(const Json& doc, const std::string& path) {
  write_file_atomically(path, json_text(doc, 2) + "\n");
}

}  // namespace stratasim
