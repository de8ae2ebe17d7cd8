// A pipeline timeline you can zoom and pan (timeline_chart's time axis only; the ranks and
// their compute/communication lanes stay in view):
//   wheel            zoom in/out around the time under the cursor
//   drag (left)      pan
//   double-click     back to the whole iteration
//   + / - / arrows   zoom around the centre / pan by a tenth of the view; Home resets
// The range never leaves [0, full] (full: the whole iteration, timeline_full_ms()); several
// views share one scale with link_time_axes().
#pragma once

#include <QtCharts/QChartView>
#include <optional>
#include <vector>

class QValueAxis;

namespace stratasim {

QValueAxis* time_axis(QChart* chart);    // the chart's bottom value axis, or nullptr
double timeline_full_ms(QChart* chart);  // the range reset_time() returns to (ms)
void set_timeline_full_ms(QChart* chart, double ms);  // and shows [0, ms]

class TimelineView : public QChartView {
 public:
  explicit TimelineView(QChart* chart = nullptr, QWidget* parent = nullptr);
  // Zoom the time axis by `factor` (< 1 zooms in) keeping `center_ms` where it is on screen.
  void zoom_time(double factor, double center_ms);
  void pan_time(double delta_ms);
  void reset_time();

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  void show_range(double lo_ms, double hi_ms);
  double time_at(QPointF view_pos) const;
  std::optional<double> drag_from_ms_;
};

// Keep the time axes of these views on one range: zooming or panning one moves the others.
// Their full ranges become the largest of them (a shared x-scale for comparing strategies).
void link_time_axes(const std::vector<TimelineView*>& views);

}  // namespace stratasim
