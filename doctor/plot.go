package doctor

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// matrix is a square grid of values for plotter.HeatMap: (column, row) = (receiver, sender).
type matrix struct {
	v [][]float64 // v[sender][receiver]
}

func (m matrix) Dims() (c, r int)   { return len(m.v), len(m.v) }
func (m matrix) Z(c, r int) float64 { return m.v[r][c] }
func (m matrix) X(c int) float64    { return float64(c) }
func (m matrix) Y(r int) float64    { return float64(r) }

// Plot writes the bandwidth matrix of each transport as a heat map, side by side, to file
// (PNG): row = sender, column = receiver, colour = MB/s; failed links and the diagonal grey.
func (r *Report) Plot(file string) error {
	ts := r.transports()
	if len(ts) == 0 {
		return fmt.Errorf("no links were measured")
	}
	names := r.liveNames()
	idx := map[string]int{}
	for i, n := range names {
		idx[n] = i
	}
	var plots []*plot.Plot
	for _, t := range ts {
		m := matrix{v: make([][]float64, len(names))}
		for i := range m.v {
			m.v[i] = make([]float64, len(names))
			for j := range m.v[i] {
				m.v[i][j] = math.NaN()
			}
		}
		for _, l := range r.Links {
			a, okA := idx[l.HostA]
			b, okB := idx[l.HostB]
			if l.Transport != t || !okA || !okB || l.Err != "" {
				continue
			}
			m.v[a][b], m.v[b][a] = l.BWAB, l.BWBA
		}
		pal := moreland.SmoothBlueRed()
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, row := range m.v {
			for _, x := range row {
				if !math.IsNaN(x) {
					lo, hi = math.Min(lo, x), math.Max(hi, x)
				}
			}
		}
		if math.IsInf(lo, 1) {
			lo, hi = 0, 1
		}
		if hi <= lo {
			hi = lo + 1
		}
		pal.SetMin(lo)
		pal.SetMax(hi)
		h := plotter.NewHeatMap(m, pal.Palette(64))
		h.NaN = color.Gray{Y: 200}
		p := plot.New()
		p.Title.Text = fmt.Sprintf("gorun doctor: %s bandwidth (MB/s), %.0f to %.0f", t, lo, hi)
		p.X.Label.Text = "receiver"
		p.Y.Label.Text = "sender"
		var ticks []plot.Tick
		for i, n := range names {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: n})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.Y.Tick.Marker = plot.ConstantTicks(ticks)
		p.Add(h)
		// Each cell's figure, so the picture reads without the colour scale.
		var labels plotter.XYLabels
		for i := range m.v {
			for j, x := range m.v[i] {
				if !math.IsNaN(x) {
					labels.XYs = append(labels.XYs, plotter.XY{X: float64(j), Y: float64(i)})
					labels.Labels = append(labels.Labels, fmt.Sprintf("%.0f", x))
				}
			}
		}
		if len(labels.XYs) > 0 {
			l, err := plotter.NewLabels(labels)
			if err != nil {
				return err
			}
			p.Add(l)
		}
		plots = append(plots, p)
	}
	img := vgimg.New(vg.Length(len(plots))*6*vg.Inch, 5.5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Inch / 3, PadY: vg.Inch / 6, PadTop: vg.Inch / 6, PadBottom: vg.Inch / 6, PadLeft: vg.Inch / 6, PadRight: vg.Inch / 6}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", file, err)
	}
	return f.Close()
}
