#include "gui/scenario_editor.h"

#include <QtGui/QFontDatabase>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QFormLayout>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QPlainTextEdit>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QVBoxLayout>

#include "hardware_models/src/hardware_json.h"
#include "sim/core/error.h"
#include "strategies/model/model_json.h"

namespace stratasim {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

const QString kCustomModel = QStringLiteral("(model as written)");

// The preset a model or cluster entry names ("gpt3-175b" or {"preset": "gpt3-175b", ...}).
std::string preset_of(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("preset") && j["preset"].is_string()) return j["preset"];
  return {};
}

// An object form of a model or cluster entry, so single fields can be overridden.
Json& as_object(Json& j) {
  if (!j.is_object()) j = Json{{"preset", j.is_string() ? j : Json("")}};
  return j;
}

}  // namespace

ScenarioEditor::ScenarioEditor(QWidget* parent)
    : QWidget(parent),
      model_(new QComboBox),
      layers_(spin(1, 100000)),
      hidden_(spin(1, 1 << 20)),
      heads_(spin(1, 4096)),
      seq_len_(spin(1, 1 << 20)),
      cluster_(new QComboBox),
      devices_(spin(1, 1 << 20)),
      tp_(spin(1, 1024)),
      pp_(spin(1, 1024)),
      micro_batch_(spin(1, 1 << 16)),
      global_batch_(spin(1, 1 << 24)),
      search_(new QLineEdit),
      text_(new QPlainTextEdit),
      error_(new QLabel) {
  // A model written out in the scenario (no preset) shows as the first entry and stays as it is.
  model_->addItem(kCustomModel);
  for (const std::string& n : model_preset_names()) model_->addItem(qs(n));
  for (const std::string& n : catalog_names(CatalogKind::kCluster)) cluster_->addItem(qs(n));
  search_->setPlaceholderText(R"({"tp": [1, 2, 4, 8], "pp": [1, 2, 4]})");
  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #b00020");
  auto* form = new QFormLayout;
  form->addRow("model preset", model_);
  auto* hyper = new QHBoxLayout;
  for (auto [name, box] : {std::pair{"layers", layers_}, {"hidden", hidden_}, {"heads", heads_},
                           {"seq_len", seq_len_}}) {
    hyper->addWidget(new QLabel(name));
    hyper->addWidget(box);
  }
  form->addRow("hyperparameters", hyper);
  form->addRow("cluster preset", cluster_);
  form->addRow("devices", devices_);
  auto* degrees = new QHBoxLayout;
  for (auto [name, box] : {std::pair{"tp", tp_}, {"pp", pp_}, {"micro_batch", micro_batch_},
                           {"global_batch", global_batch_}}) {
    degrees->addWidget(new QLabel(name));
    degrees->addWidget(box);
  }
  form->addRow("strategy", degrees);
  form->addRow("search axes", search_);
  auto* apply = new QPushButton("Apply");
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(new QLabel("scenario JSON (every field; the form writes into it):"));
  layout->addWidget(text_, 1);
  layout->addWidget(error_);
  layout->addWidget(apply, 0, Qt::AlignRight);
  connect(apply, &QPushButton::clicked, this, &ScenarioEditor::applied);
  connect(model_, &QComboBox::currentTextChanged, this, &ScenarioEditor::form_changed);
  connect(cluster_, &QComboBox::currentTextChanged, this, &ScenarioEditor::form_changed);
  connect(search_, &QLineEdit::editingFinished, this, &ScenarioEditor::form_changed);
  for (QSpinBox* box : {layers_, hidden_, heads_, seq_len_, devices_, tp_, pp_, micro_batch_,
                        global_batch_}) {
    connect(box, &QSpinBox::valueChanged, this, &ScenarioEditor::form_changed);
  }
}

QSpinBox* ScenarioEditor::spin(int lo, int hi) {
  auto* box = new QSpinBox;
  box->setRange(lo, hi);
  box->setKeyboardTracking(false);  // one change per edit, not per digit
  return box;
}

QSpinBox* ScenarioEditor::degree(const char* key) const {
  const std::string k = key;
  return k == "tp" ? tp_ : k == "pp" ? pp_ : k == "micro_batch" ? micro_batch_ : global_batch_;
}

void ScenarioEditor::set_document(const Json& doc, const std::string& file) {
  file_ = file;
  loading_ = true;
  text_->setPlainText(qs(json_text(doc, 2)));
  try {
    const Scenario sc = read_scenario(doc, file);
    const std::string preset = preset_of(doc.value("model", Json()));
    model_->setCurrentText(preset.empty() ? kCustomModel : qs(preset));
    const TransformerSpec& t = sc.model.transformer;
    layers_->setValue(t.layers), hidden_->setValue(t.hidden), heads_->setValue(t.heads);
    seq_len_->setValue(t.seq_len);
    cluster_->setCurrentText(qs(preset_of(doc.value("cluster", Json()))));
    devices_->setValue(sc.hardware.num_devices);
    tp_->setValue(sc.strategy.tp), pp_->setValue(sc.strategy.pp);
    micro_batch_->setValue(sc.strategy.micro_batch);
    global_batch_->setValue(sc.strategy.global_batch);
    search_->setText(doc.contains("search") ? qs(json_text(doc["search"])) : QString());
    show_error({});
  } catch (const std::exception& e) {
    show_error(qs(e.what()));
  }
  loading_ = false;
}

void ScenarioEditor::form_changed() {
  if (loading_) return;
  Json doc;
  try {
    doc = document();
  } catch (const std::exception& e) {
    return show_error(qs(e.what()));
  }
  const Scenario before = [&] {
    try {
      return read_scenario(doc, file_);
    } catch (const std::exception&) {
      return Scenario{};
    }
  }();
  // Only fields that differ from what the document already gives are written, so an untouched
  // form leaves the document as it was.
  Json& model = doc["model"];
  const QString chosen = model_->currentText() == kCustomModel ? QString() : model_->currentText();
  if (!chosen.isEmpty() && qs(preset_of(model)) != chosen) {
    model = chosen.toStdString();
  } else {
    const TransformerSpec& t = before.model.transformer;
    for (auto [key, box, now] : {std::tuple{"layers", layers_, t.layers}, {"hidden", hidden_, t.hidden},
                                 {"heads", heads_, t.heads}, {"seq_len", seq_len_, t.seq_len}}) {
      if (box->value() != now) as_object(model)[key] = box->value();
    }
  }
  Json& cluster = as_object(doc["cluster"]);
  cluster["preset"] = cluster_->currentText().toStdString();
  if (devices_->value() != before.hardware.num_devices) cluster["devices"] = devices_->value();
  Json& strategy = doc["strategy"];
  for (auto [key, box] : {std::pair{"tp", tp_}, {"pp", pp_}, {"micro_batch", micro_batch_},
                          {"global_batch", global_batch_}}) {
    strategy[key] = box->value();
  }
  const QString axes = search_->text().trimmed();
  try {
    if (axes.isEmpty()) {
      doc.erase("search");
    } else {
      doc["search"] = parse_json_text(axes.toStdString(), "search axes");
    }
  } catch (const std::exception& e) {
    return show_error(qs(e.what()));
  }
  loading_ = true;
  text_->setPlainText(qs(json_text(doc, 2)));
  loading_ = false;
  show_error({});
}

Json ScenarioEditor::document() const {
  return parse_json_text(text_->toPlainText().toStdString(), file_.empty() ? "scenario" : file_);
}

Scenario ScenarioEditor::scenario() const { return read_scenario(document(), file_); }

QString ScenarioEditor::error_text() const { return error_->text(); }

void ScenarioEditor::show_error(const QString& message) {
  error_->setText(message);
  error_->setVisible(!message.isEmpty());
}

}  // namespace stratasim
