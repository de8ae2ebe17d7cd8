#include "gui/timeline_view.h"

#include <QtCharts/QValueAxis>
#include <QtGui/QKeyEvent>
#include <QtGui/QMouseEvent>
#include <QtGui/QWheelEvent>
#include <algorithm>
#include <cmath>

namespace stratasim {
namespace {

constexpr const char* kFullProperty = "stratasim_full_ms";
constexpr double kWheelStep = 0.8;         // one wheel notch in: 80% of the range
constexpr double kKeyPanShare = 0.1;       // arrows pan a tenth of the view
constexpr double kSmallestShare = 1e-6;    // the narrowest view: a millionth of the iteration
constexpr double kDegreesPerNotch = 15.0;  // Qt's angleDelta is in eighths of a degree

// Ticks at a round step (1, 2 or 5 x 10^k ms) giving about six labels over [lo, hi].
void round_ticks(QValueAxis* x, double lo, double hi) {
  constexpr double kLabels = 6;
  const double raw = (hi - lo) / kLabels;
  if (!(raw > 0) || !std::isfinite(raw)) return;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw <= decade ? decade : raw <= 2 * decade ? 2 * decade
                      : raw <= 5 * decade ? 5 * decade : 10 * decade;
  x->setTickType(QValueAxis::TicksDynamic);
  x->setTickAnchor(0);
  x->setTickInterval(step);
  x->setLabelFormat(step >= 1 ? "%.0f" : step >= 0.1 ? "%.1f" : step >= 0.01 ? "%.2f" : "%.3g");
}

}  // namespace

QValueAxis* time_axis(QChart* chart) {
  if (!chart) return nullptr;
  for (QAbstractAxis* a : chart->axes(Qt::Horizontal)) {
    if (auto* v = qobject_cast<QValueAxis*>(a)) return v;
  }
  return nullptr;
}

double timeline_full_ms(QChart* chart) {
  QValueAxis* x = time_axis(chart);
  if (!x) return 0;
  const QVariant full = x->property(kFullProperty);
  return full.isValid() ? full.toDouble() : x->max();
}

void set_timeline_full_ms(QChart* chart, double ms) {
  QValueAxis* x = time_axis(chart);
  if (!x || !(ms > 0)) return;
  x->setProperty(kFullProperty, ms);
  x->setRange(0, ms);
  round_ticks(x, 0, ms);
}

TimelineView::TimelineView(QChart* chart, QWidget* parent) : QChartView(parent) {
  if (chart) setChart(chart);
  setRenderHint(QPainter::Antialiasing);
  setFocusPolicy(Qt::StrongFocus);
  setToolTip("wheel: zoom, drag: pan, double-click: whole iteration");
}

void TimelineView::show_range(double lo, double hi) {
  QValueAxis* x = time_axis(chart());
  const double full = timeline_full_ms(chart());
  if (!x || !(full > 0)) return;
  const double width = std::clamp(hi - lo, full * kSmallestShare, full);
  lo = std::clamp(lo, 0.0, full - width);
  x->setRange(lo, lo + width);
  round_ticks(x, lo, lo + width);
}

void TimelineView::zoom_time(double factor, double center_ms) {
  QValueAxis* x = time_axis(chart());
  if (!x || !(factor > 0) || !std::isfinite(factor)) return;
  show_range(center_ms - (center_ms - x->min()) * factor, center_ms + (x->max() - center_ms) * factor);
}

void TimelineView::pan_time(double delta_ms) {
  QValueAxis* x = time_axis(chart());
  if (x && std::isfinite(delta_ms)) show_range(x->min() + delta_ms, x->max() + delta_ms);
}

void TimelineView::reset_time() { show_range(0, timeline_full_ms(chart())); }

double TimelineView::time_at(QPointF view_pos) const {
  const QPointF scene = mapToScene(view_pos.toPoint());
  return chart()->mapToValue(chart()->mapFromScene(scene)).x();
}

void TimelineView::wheelEvent(QWheelEvent* event) {
  const double notches = event->angleDelta().y() / 8.0 / kDegreesPerNotch;
  if (notches == 0 || !chart()) return QChartView::wheelEvent(event);
  zoom_time(std::pow(kWheelStep, notches), time_at(event->position()));
  event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton && chart()) {
    drag_from_ms_ = time_at(event->position());
    event->accept();
    return;
  }
  QChartView::mousePressEvent(event);
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
  if (drag_from_ms_ && chart()) {
    pan_time(*drag_from_ms_ - time_at(event->position()));  // the grabbed time follows the cursor
    event->accept();
    return;
  }
  QChartView::mouseMoveEvent(event);
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
  if (drag_from_ms_) {
    drag_from_ms_.reset();
    event->accept();
    return;
  }
  QChartView::mouseReleaseEvent(event);
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* event) {
  reset_time();
  event->accept();
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
  QValueAxis* x = time_axis(chart());
  if (!x) return QChartView::keyPressEvent(event);
  const double centre = (x->min() + x->max()) / 2, step = (x->max() - x->min()) * kKeyPanShare;
  switch (event->key()) {
    case Qt::Key_Plus: case Qt::Key_Equal: zoom_time(kWheelStep, centre); break;
    case Qt::Key_Minus: zoom_time(1 / kWheelStep, centre); break;
    case Qt::Key_Left: pan_time(-step); break;
    case Qt::Key_Right: pan_time(step); break;
    case Qt::Key_Home: reset_time(); break;
    default: return QChartView::keyPressEvent(event);
  }
  event->accept();
}

void link_time_axes(const std::vector<TimelineView*>& views) {
  double full = 0;
  for (TimelineView* v : views) full = std::max(full, timeline_full_ms(v->chart()));
  for (TimelineView* v : views) set_timeline_full_ms(v->chart(), full);
  for (TimelineView* from : views) {
    QValueAxis* x = time_axis(from->chart());
    if (!x) continue;
    for (TimelineView* to : views) {
      if (to == from) continue;
      // setRange with the range an axis already has emits nothing: no ping-pong.
      QObject::connect(x, &QValueAxis::rangeChanged, to, [to](qreal lo, qreal hi) {
        if (QValueAxis* other = time_axis(to->chart())) other->setRange(lo, hi), round_ticks(other, lo, hi);
      });
    }
  }
}

}  // namespace stratasim
