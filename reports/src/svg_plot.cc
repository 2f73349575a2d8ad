#include "svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "seam/reports/report.h"

namespace seam::reports {

namespace {

constexpr double kWidth = 800, kHeight = 380;
constexpr double kLeft = 70, kRight = 270, kTop = 34, kBottom = 56;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr int kYTicks = 5;
// Colour-blind-safe palette (Okabe-Ito), in series order.
constexpr const char* kColours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                    "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
constexpr int kColourCount = sizeof kColours / sizeof kColours[0];

std::string num(double v, int digits = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string text(double x, double y, const std::string& s, const char* anchor = "middle",
                 int size = 11, const std::string& extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor +
         "\" font-size=\"" + std::to_string(size) + "\"" + extra + ">" + escapeXml(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& style) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
         num(y2) + "\" " + style + "/>\n";
}

/// A round upper bound for the y axis: 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times
/// a power of ten (five grid steps of round numbers).
double niceMax(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
    if (v <= m * p) return m * p;
  }
  return 10 * p;
}

std::string byteLabel(double v) {
  const char* units[] = {"", "K", "M", "G"};
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return num(v, 0) + units[u];
}

/// The frame: title, y grid with labels, axis labels; returns the y scale max.
std::string frame(const std::string& title, const std::string& y_label, const std::string& x_label,
                  double y_max) {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth, 0) +
                  "\" height=\"" + num(kHeight, 0) + "\" viewBox=\"0 0 " + num(kWidth, 0) + " " +
                  num(kHeight, 0) + "\" font-family=\"sans-serif\" class=\"plot\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + num(kWidth, 0) + "\" height=\"" + num(kHeight, 0) +
       "\" fill=\"white\"/>\n";
  s += text(kLeft + kPlotW / 2, 18, title, "middle", 13, " font-weight=\"bold\"");
  for (int i = 0; i <= kYTicks; ++i) {
    const double v = y_max * i / kYTicks;
    const double y = kTop + kPlotH - kPlotH * i / kYTicks;
    s += line(kLeft, y, kLeft + kPlotW, y, "stroke=\"#ddd\"");
    s += text(kLeft - 6, y + 4, num(v, y_max < 10 ? 2 : (y_max < 100 ? 1 : 0)), "end", 10);
  }
  s += line(kLeft, kTop, kLeft, kTop + kPlotH, "stroke=\"#333\"");
  s += line(kLeft, kTop + kPlotH, kLeft + kPlotW, kTop + kPlotH, "stroke=\"#333\"");
  s += text(16, kTop + kPlotH / 2, y_label, "middle", 11,
            " transform=\"rotate(-90 16 " + num(kTop + kPlotH / 2) + ")\"");
  s += text(kLeft + kPlotW / 2, kHeight - 12, x_label, "middle", 11);
  return s;
}

std::string legend(const std::vector<std::string>& names, const std::vector<bool>& dashed) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double y = kTop + 8 + 18.0 * static_cast<double>(i);
    const char* colour = kColours[i % kColourCount];
    s += line(kLeft + kPlotW + 12, y, kLeft + kPlotW + 36, y,
              std::string("stroke=\"") + colour + "\" stroke-width=\"2\"" +
                  (dashed[i] ? " stroke-dasharray=\"5,3\"" : ""));
    s += text(kLeft + kPlotW + 42, y + 4, names[i], "start", 10);
  }
  return s;
}

}  // namespace

std::string escapeXml(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string renderLinePlot(const LinePlot& plot) {
  double x_min = 0, x_max = 0, y_max = 0;
  bool any = false;
  for (const PlotSeries& s : plot.series) {
    for (const auto& [x, y] : s.points) {
      if (plot.log2_x && x <= 0) continue;
      const double lx = plot.log2_x ? std::log2(x) : x;
      x_min = any ? std::min(x_min, lx) : lx;
      x_max = any ? std::max(x_max, lx) : lx;
      y_max = std::max(y_max, y);
      any = true;
    }
  }
  if (!any) return "";
  if (plot.log2_x) {
    x_min = std::floor(x_min);
    x_max = std::ceil(x_max);
  }
  if (x_max <= x_min) {  // one x value: centre it
    x_min -= 1;
    x_max += 1;
  }
  y_max = niceMax(y_max * 1.05);
  auto px = [&](double x) {
    return kLeft + kPlotW * ((plot.log2_x ? std::log2(x) : x) - x_min) / (x_max - x_min);
  };
  auto py = [&](double y) { return kTop + kPlotH - kPlotH * y / y_max; };

  std::string s = frame(plot.title, plot.y_label, plot.x_label, y_max);
  // x ticks: powers of two (at most ~12 labels), or five even steps.
  if (plot.log2_x) {
    const int span = static_cast<int>(x_max - x_min);
    const int step = std::max(1, (span + 11) / 12);
    for (int e = static_cast<int>(x_min); e <= static_cast<int>(x_max); e += step) {
      const double v = std::exp2(e);
      const double x = px(v);
      s += line(x, kTop + kPlotH, x, kTop + kPlotH + 4, "stroke=\"#333\"");
      s += text(x, kTop + kPlotH + 16, plot.byte_ticks ? byteLabel(v) : num(v, 0), "middle", 10);
    }
  } else {
    for (int i = 0; i <= 5; ++i) {
      const double v = x_min + (x_max - x_min) * i / 5;
      s += text(px(v), kTop + kPlotH + 16, num(v, 1), "middle", 10);
    }
  }
  std::vector<std::string> names;
  std::vector<bool> dashed;
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& series = plot.series[i];
    std::vector<std::pair<double, double>> pts;
    for (const auto& p : series.points) {
      if (!plot.log2_x || p.first > 0) pts.push_back(p);
    }
    std::stable_sort(pts.begin(), pts.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    const char* colour = kColours[i % kColourCount];
    std::string path;
    for (const auto& [x, y] : pts)
      path += (path.empty() ? "" : " ") + num(px(x)) + "," + num(py(y));
    if (pts.size() > 1) {
      s += "<polyline fill=\"none\" stroke=\"" + std::string(colour) + "\" stroke-width=\"2\"" +
           (series.dashed ? " stroke-dasharray=\"5,3\"" : "") + " points=\"" + path + "\"/>\n";
    }
    for (const auto& [x, y] : pts) {
      s += "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"3\" fill=\"" + colour +
           "\"><title>" + escapeXml(series.name) + ": " +
           (plot.byte_ticks ? byteLabel(x) : num(x, 0)) + ", " + num(y, 2) + "</title></circle>\n";
    }
    names.push_back(series.name);
    dashed.push_back(series.dashed);
  }
  s += legend(names, dashed);
  return s + "</svg>\n";
}

std::string renderBarPlot(const BarPlot& plot) {
  double y_max = 0;
  for (const BarGroup& g : plot.groups) {
    for (double v : g.values) y_max = std::max(y_max, v);
  }
  if (plot.groups.empty() || y_max <= 0) return "";
  y_max = niceMax(y_max * 1.05);
  auto py = [&](double y) { return kTop + kPlotH - kPlotH * y / y_max; };
  std::string s = frame(plot.title, plot.y_label, "", y_max);
  const double group_w = kPlotW / static_cast<double>(plot.groups.size());
  const double bar_w =
      group_w * 0.8 / static_cast<double>(std::max<std::size_t>(1, plot.bar_names.size()));
  for (std::size_t g = 0; g < plot.groups.size(); ++g) {
    const double x0 = kLeft + group_w * static_cast<double>(g) + group_w * 0.1;
    for (std::size_t b = 0; b < plot.groups[g].values.size() && b < plot.bar_names.size(); ++b) {
      const double v = plot.groups[g].values[b];
      const double x = x0 + bar_w * static_cast<double>(b);
      s += "<rect x=\"" + num(x) + "\" y=\"" + num(py(v)) + "\" width=\"" + num(bar_w * 0.92) +
           "\" height=\"" + num(kTop + kPlotH - py(v)) + "\" fill=\"" + kColours[b % kColourCount] +
           "\"><title>" + escapeXml(plot.groups[g].label + ", " + plot.bar_names[b]) + ": " +
           num(v, 1) + "</title></rect>\n";
    }
    s += text(kLeft + group_w * (static_cast<double>(g) + 0.5), kTop + kPlotH + 16,
              plot.groups[g].label, "middle", 10);
  }
  s += legend(plot.bar_names, std::vector<bool>(plot.bar_names.size(), false));
  return s + "</svg>\n";
}

}  // namespace seam::reports

namespace seam::reports {

namespace {

/// The opening of a chart `width` x `height`: white ground and bold title.
std::string chartFrame(double width, double height, const std::string& title) {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width, 0) +
                  "\" height=\"" + num(height, 0) + "\" viewBox=\"0 0 " + num(width, 0) + " " +
                  num(height, 0) + "\" font-family=\"sans-serif\" class=\"plot\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + num(width, 0) + "\" height=\"" + num(height, 0) +
       "\" fill=\"white\"/>\n";
  return s + text(width / 2, 18, title, "middle", 13, " font-weight=\"bold\"");
}

/// A legend on one line at `y`: a swatch and the name of each entry.
std::string swatches(double x, double y,
                     const std::vector<std::pair<std::string, std::string>>& e) {
  std::string s;
  for (const auto& [name, colour] : e) {
    s += "<rect x=\"" + num(x) + "\" y=\"" + num(y - 9) + "\" width=\"11\" height=\"11\" fill=\"" +
         colour + "\" stroke=\"#666\" stroke-width=\"0.5\"/>\n";
    s += text(x + 15, y, name, "start", 11);
    x += 30 + 6.2 * static_cast<double>(name.size());
  }
  return s;
}

std::string rect(double x, double y, double w, double h, const std::string& fill,
                 const std::string& tip) {
  return "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" +
         num(h) + "\" fill=\"" + fill + "\">" +
         (tip.empty() ? "" : "<title>" + escapeXml(tip) + "</title>") + "</rect>\n";
}

}  // namespace

std::string renderStackedBars(const StackedBars& plot) {
  if (plot.rows.empty()) return "";
  double label_w = 60;
  for (const auto& [name, values] : plot.rows)
    label_w = std::max(label_w, 6.3 * static_cast<double>(name.size()) + 12);
  constexpr double kBar = 16, kGap = 5, kChartW = 900, kTopY = 52;
  const double bars_w = kChartW - label_w - 90;
  const double height = kTopY + (kBar + kGap) * static_cast<double>(plot.rows.size()) + 16;
  double scale_max = 0;
  for (const auto& row : plot.rows) {
    double total = 0;
    for (double v : row.second) total += v;
    scale_max = std::max(scale_max, total);
  }
  std::vector<std::pair<std::string, std::string>> legend;
  for (std::size_t i = 0; i < plot.segment_names.size(); ++i)
    legend.emplace_back(plot.segment_names[i], plot.segment_colours[i]);
  std::string s = chartFrame(kChartW, height, plot.title) + swatches(label_w, 38, legend);
  double y = kTopY;
  for (const auto& [name, values] : plot.rows) {
    double total = 0;
    for (double v : values) total += v;
    const double full = plot.share ? total : scale_max;
    s += text(label_w - 6, y + kBar - 4, name, "end", 11);
    double x = label_w;
    for (std::size_t i = 0; i < values.size() && i < plot.segment_colours.size(); ++i) {
      if (values[i] <= 0 || full <= 0) continue;
      const double w = bars_w * values[i] / full;
      s += rect(x, y, w, kBar, plot.segment_colours[i],
                name + ": " + num(values[i], 0) + " " + plot.segment_names[i]);
      x += w;
    }
    s += text(x + 4, y + kBar - 4, grouped(static_cast<long long>(total)), "start", 10,
              " fill=\"#555\"");
    y += kBar + kGap;
  }
  return s + "</svg>\n";
}

std::string renderCellGrid(const CellGrid& grid) {
  if (grid.row_names.empty() || grid.column_names.empty()) return "";
  double label_w = 60, head_h = 40;
  for (const std::string& r : grid.row_names)
    label_w = std::max(label_w, 6.0 * static_cast<double>(r.size()) + 10);
  for (const std::string& c : grid.column_names)
    head_h = std::max(head_h, 4.6 * static_cast<double>(c.size()) + 14);
  constexpr double kCell = 14, kTopY = 50;
  const double cols = static_cast<double>(grid.column_names.size());
  const double width = std::max(label_w + kCell * cols + 160, 640.0);
  const double top = kTopY + head_h;
  const double height = top + kCell * static_cast<double>(grid.row_names.size()) + 12;
  std::string s = chartFrame(width, height, grid.title) + swatches(10, 38, grid.legend);
  for (std::size_t c = 0; c < grid.column_names.size(); ++c) {
    const double x = label_w + kCell * (static_cast<double>(c) + 0.5) + 3;
    s += text(x, top - 4, grid.column_names[c], "start", 10,
              " transform=\"rotate(-60 " + num(x) + " " + num(top - 4) + ")\"");
  }
  for (std::size_t r = 0; r < grid.row_names.size(); ++r) {
    const double y = top + kCell * static_cast<double>(r);
    s += text(label_w - 5, y + kCell - 3, grid.row_names[r], "end", 10);
    for (std::size_t c = 0; c < grid.column_names.size(); ++c) {
      const int k = r < grid.cells.size() && c < grid.cells[r].size() ? grid.cells[r][c] : -1;
      if (k < 0 || k >= static_cast<int>(grid.legend.size())) continue;
      const std::string tip =
          r < grid.tips.size() && c < grid.tips[r].size() ? grid.tips[r][c] : "";
      s += rect(label_w + kCell * static_cast<double>(c) + 0.5, y + 0.5, kCell - 1, kCell - 1,
                grid.legend[k].second, tip);
    }
  }
  return s + "</svg>\n";
}

}  // namespace seam::reports
