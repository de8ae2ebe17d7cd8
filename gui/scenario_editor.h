// Editing a scenario: a form for the common fields (model preset and hyperparameters, cluster
// preset and device count, parallel degrees and batch, search axes) that writes into the
// scenario's JSON, and the JSON itself for everything else. Apply validates the whole document
// with read_scenario() (the same rules and messages as the command line).
#pragma once

#include <QtWidgets/QWidget>

#include "sim/scenario/scenario.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;

namespace stratasim {

class ScenarioEditor : public QWidget {
  Q_OBJECT
 public:
  explicit ScenarioEditor(QWidget* parent = nullptr);

  // Shows a document (as loaded from `file`) in the form and the text.
  void set_document(const Json& doc, const std::string& file);
  // The text parsed and read as a scenario; throws InputError with the reason.
  Scenario scenario() const;
  Json document() const;  // the text parsed; throws InputError when it is not JSON

  // For tests: the form's widgets.
  QSpinBox* devices() const { return devices_; }
  QSpinBox* degree(const char* key) const;  // "tp", "pp", "micro_batch", "global_batch"
  QSpinBox* layers() const { return layers_; }
  QComboBox* model_preset() const { return model_; }
  QLineEdit* search_axes() const { return search_; }
  QPlainTextEdit* text() const { return text_; }
  void show_error(const QString& message);  // "" clears it
  QString error_text() const;

 signals:
  void applied();  // Apply pressed: the caller reads scenario()

 private:
  void form_changed();  // writes the form into the JSON text
  QSpinBox* spin(int lo, int hi);
  QComboBox* model_;
  QSpinBox *layers_, *hidden_, *heads_, *seq_len_;
  QComboBox* cluster_;
  QSpinBox *devices_, *tp_, *pp_, *micro_batch_, *global_batch_;
  QLineEdit* search_;
  QPlainTextEdit* text_;
  QLabel* error_;
  std::string file_;
  bool loading_ = false;
};

}  // namespace stratasim
