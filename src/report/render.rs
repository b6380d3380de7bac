//! Drawing a [`Figure`] (panels of lines, bands and dashed verticals) with plotters, to SVG and
//! PNG.
//!
//! PNG text needs a font: plotters' `ab_glyph` backend is given DejaVu Sans, embedded in the
//! binary from `assets/fonts/DejaVuSans.ttf` (Bitstream Vera licence, see
//! `assets/fonts/LICENSE-DejaVu.txt`), so no system font or fontconfig is needed. SVG text
//! names the `sans-serif` family and is laid out with the same font metrics.

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::ReportError;

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

fn ensure_font() -> Result<(), ReportError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(ReportError::plot(
            "font",
            "the embedded DejaVu Sans font could not be loaded",
        ))
    }
}

/// Colours of the series, in order (Tableau 10).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// A polyline series.
#[derive(Debug, Clone)]
pub struct Line {
    pub label: String,
    pub color: RGBColor,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

/// A filled band between two curves sampled at the same x.
#[derive(Debug, Clone)]
pub struct Band {
    pub label: String,
    pub color: RGBColor,
    pub opacity: f64,
    pub lower: Vec<(f64, f64)>,
    pub upper: Vec<(f64, f64)>,
}

/// Dashed vertical lines at the given x, with one legend entry.
#[derive(Debug, Clone)]
pub struct VLines {
    pub label: String,
    pub color: RGBColor,
    pub xs: Vec<f64>,
}

/// One chart of a figure.
#[derive(Debug, Clone)]
pub struct Panel {
    pub caption: Option<String>,
    pub x_label: String,
    pub y_label: String,
    pub log_y: bool,
    /// Start the y axis at 0 (linear axes only).
    pub y_from_zero: bool,
    pub lines: Vec<Line>,
    pub bands: Vec<Band>,
    pub vlines: Vec<VLines>,
    pub legend: SeriesLabelPosition,
}

impl Panel {
    pub fn new(x_label: &str, y_label: &str) -> Self {
        Panel {
            caption: None,
            x_label: x_label.into(),
            y_label: y_label.into(),
            log_y: false,
            y_from_zero: true,
            lines: Vec::new(),
            bands: Vec::new(),
            vlines: Vec::new(),
            legend: SeriesLabelPosition::UpperRight,
        }
    }

    fn all_points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.lines
            .iter()
            .flat_map(|l| l.points.iter().copied())
            .chain(
                self.bands
                    .iter()
                    .flat_map(|b| b.lower.iter().chain(&b.upper).copied()),
            )
            .filter(|(x, y)| x.is_finite() && y.is_finite())
    }

    fn ranges(&self) -> (Range<f64>, Range<f64>) {
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for (x, y) in self.all_points() {
            if self.log_y && y <= 0.0 {
                continue;
            }
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            (x0, x1) = (0.0, 1.0);
        }
        if y0 > y1 {
            (y0, y1) = if self.log_y { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if x1 - x0 < 1e-9 {
            x1 = x0 + 1.0;
        }
        let xr = x0..x1;
        let yr = if self.log_y {
            // Headroom above the curves for the legend: about a third of the decades shown.
            let decades = (y1 / y0).log10().max(1.0);
            (y0 / 1.6)..(y1 * 10f64.powf((0.5 * decades).max(0.9)))
        } else {
            let lo = if self.y_from_zero { y0.min(0.0) } else { y0 };
            let span = (y1 - lo).max(1e-9);
            let lo = if self.y_from_zero && lo >= 0.0 {
                lo
            } else {
                lo - 0.04 * span
            };
            lo..(y1 + 0.06 * span)
        };
        (xr, yr)
    }
}

/// A figure: a title over one or more panels side by side.
#[derive(Debug, Clone)]
pub struct Figure {
    /// File stem (`NAME.svg`, `NAME.png`, `NAME.csv`).
    pub name: String,
    pub title: String,
    pub panels: Vec<Panel>,
    pub width: u32,
    pub height: u32,
}

const SUPERSCRIPT: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];

/// Tick label: powers of ten as 10ⁿ on log axes, otherwise a short decimal.
fn tick(v: f64, log: bool) -> String {
    if log && v > 0.0 {
        let e = v.log10();
        if (e - e.round()).abs() < 1e-9 {
            let e = e.round() as i64;
            if (0..=3).contains(&e) {
                return format!("{}", 10f64.powi(e as i32));
            }
            let digits: String = e
                .abs()
                .to_string()
                .chars()
                .map(|d| SUPERSCRIPT[d.to_digit(10).unwrap_or(0) as usize])
                .collect();
            return format!("10{}{digits}", if e < 0 { "⁻" } else { "" });
        }
    }
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    let s = if a >= 1e6 {
        format!("{:.1e}", v)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    let s = if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    s
}

fn draw_panel<DB, Y>(
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
    x: Range<f64>,
    y: Y,
    y_span: (f64, f64),
) -> Result<(), String>
where
    DB: DrawingBackend,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let mut b = ChartBuilder::on(area);
    b.margin(18)
        .margin_right(30)
        .x_label_area_size(60)
        .y_label_area_size(95);
    if let Some(c) = &p.caption {
        b.caption(c, (FAMILY, 24));
    }
    let mut chart = b.build_cartesian_2d(x, y).map_err(e)?;
    let log = p.log_y;
    let yfmt = move |v: &f64| tick(*v, log);
    let xfmt = |v: &f64| tick(*v, false);
    chart
        .configure_mesh()
        .x_desc(p.x_label.as_str())
        .y_desc(p.y_label.as_str())
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .label_style((FAMILY, 17))
        .axis_desc_style((FAMILY, 20))
        .bold_line_style(RGBColor(200, 200, 200).mix(0.5))
        .light_line_style(RGBColor(235, 235, 235).mix(0.3))
        .max_light_lines(2)
        .draw()
        .map_err(e)?;

    for band in &p.bands {
        let poly: Vec<(f64, f64)> = band
            .upper
            .iter()
            .copied()
            .chain(band.lower.iter().rev().copied())
            .collect();
        let fill = band.color.mix(band.opacity).filled();
        chart
            .draw_series(std::iter::once(Polygon::new(poly, fill)))
            .map_err(e)?
            .label(band.label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 7), (x + 24, y + 7)], fill));
    }
    for v in &p.vlines {
        let style = v.color.mix(0.55).stroke_width(1);
        let mut first = true;
        for &xv in &v.xs {
            let series = chart
                .draw_series(DashedLineSeries::new(
                    vec![(xv, y_span.0), (xv, y_span.1)],
                    6,
                    5,
                    style,
                ))
                .map_err(e)?;
            if first {
                series.label(v.label.as_str()).legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new(vec![(0, 0), (6, 0)], style)
                        + PathElement::new(vec![(11, 0), (17, 0)], style)
                        + PathElement::new(vec![(22, 0), (24, 0)], style)
                });
                first = false;
            }
        }
    }
    for l in &p.lines {
        let style = l.color.stroke_width(if l.dashed { 2 } else { 3 });
        let pts: Vec<(f64, f64)> = l
            .points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!p.log_y || *y > 0.0))
            .collect();
        let series = if l.dashed {
            chart
                .draw_series(DashedLineSeries::new(pts, 9, 5, style))
                .map_err(e)?
        } else {
            // Segment by segment: plotters joins a thick polyline with miters, which shoot far
            // out of the panel where a dense series zigzags (ages with few boards).
            chart
                .draw_series(
                    pts.windows(2)
                        .map(|w| PathElement::new(vec![w[0], w[1]], style)),
                )
                .map_err(e)?
        };
        let dashed = l.dashed;
        series.label(l.label.as_str()).legend(move |(x, y)| {
            if dashed {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (9, 0)], style)
                    + PathElement::new(vec![(15, 0), (24, 0)], style)
            } else {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (24, 0)], style)
                    + PathElement::new(vec![(0, 0), (0, 0)], style)
            }
        });
    }
    chart
        .configure_series_labels()
        .position(p.legend.clone())
        .margin(12)
        .legend_area_size(30)
        .label_font((FAMILY, 17))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(120, 120, 120))
        .draw()
        .map_err(e)?;
    Ok(())
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, fig: &Figure) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let body = root.titled(&fig.title, (FAMILY, 28)).map_err(e)?;
    let areas = body.split_evenly((1, fig.panels.len().max(1)));
    for (area, p) in areas.iter().zip(&fig.panels) {
        let (xr, yr) = p.ranges();
        let span = (yr.start, yr.end);
        if p.log_y {
            draw_panel(area, p, xr, yr.log_scale(), span)?;
        } else {
            draw_panel(area, p, xr, yr, span)?;
        }
    }
    root.present().map_err(e)?;
    Ok(())
}

/// Renders `fig` to an SVG string.
pub fn to_svg(fig: &Figure) -> Result<String, ReportError> {
    ensure_font()?;
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (fig.width, fig.height)).into_drawing_area();
        draw(root, fig).map_err(|m| ReportError::plot(&fig.name, m))?;
    }
    Ok(s)
}

/// Renders `fig` to a PNG file at `path` (whose extension must be `.png`).
pub fn to_png(fig: &Figure, path: &Path) -> Result<(), ReportError> {
    ensure_font()?;
    let root = BitMapBackend::new(path, (fig.width, fig.height)).into_drawing_area();
    draw(root, fig).map_err(|m| ReportError::plot(&fig.name, m))
}

#[cfg(test)]
mod tests {
    use super::tick;

    #[test]
    fn ticks() {
        assert_eq!(tick(1e6, true), "10⁶");
        assert_eq!(tick(100.0, true), "100");
        assert_eq!(tick(0.5, false), "0.5");
        assert_eq!(tick(250.0, false), "250");
        assert_eq!(tick(12.25, false), "12.2");
    }
}
