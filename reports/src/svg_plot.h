// Small SVG charts for the HTML report, written as text (no script, no
// external file): line plots over a linear or log2 x axis and grouped bars.
// Numbers are printed with fixed precision, so a store renders the same bytes
// on every machine.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace seam::reports {

/// One line of a plot: points (x, y), drawn in x order.
struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;
  bool dashed = false;
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log2_x = false;      ///< x ticks at powers of two
  bool byte_ticks = false;  ///< x tick labels as 4K, 2M, ... (sizes in bytes)
  std::vector<PlotSeries> series;
};

/// Groups of bars side by side: values[i] is the bar of bar_names[i].
struct BarGroup {
  std::string label;
  std::vector<double> values;
};

struct BarPlot {
  std::string title;
  std::string y_label;
  std::vector<std::string> bar_names;
  std::vector<BarGroup> groups;
};

/// Horizontal bars, one per row, each split into segments stacked left to
/// right (segment i in colour i, named in the legend). With `share`, every
/// bar is its row's total (100%) and the segments its shares.
struct StackedBars {
  std::string title;
  std::vector<std::string> segment_names;
  std::vector<std::string> segment_colours;  ///< CSS colours, one per segment
  std::vector<std::pair<std::string, std::vector<double>>> rows;
  bool share = false;
};

/// A grid of cells (row x column) each drawn in one legend entry's colour,
/// with an optional tooltip; -1 leaves a cell empty.
struct CellGrid {
  std::string title;
  std::vector<std::string> row_names;
  std::vector<std::string> column_names;
  std::vector<std::pair<std::string, std::string>> legend;  ///< (name, CSS colour)
  std::vector<std::vector<int>> cells;                      ///< [row][column] legend index
  std::vector<std::vector<std::string>> tips;               ///< [row][column], may be empty
};

/// `text` with & < > " written as entities (HTML and SVG alike).
std::string escapeXml(const std::string& text);

/// An <svg> element; empty when there is nothing to draw.
std::string renderLinePlot(const LinePlot& plot);
std::string renderBarPlot(const BarPlot& plot);
std::string renderStackedBars(const StackedBars& plot);
std::string renderCellGrid(const CellGrid& grid);

}  // namespace seam::reports
