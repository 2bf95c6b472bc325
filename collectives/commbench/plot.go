package commbench

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Plot writes a PNG with two log-log panels: latency against message size and bandwidth
// against message size.
func (r *Result) Plot(file string) error {
	var lat, bw plotter.XYs
	for _, row := range r.Rows {
		if row.Size <= 0 {
			continue // log scale
		}
		if row.AvgUs > 0 {
			lat = append(lat, plotter.XY{X: float64(row.Size), Y: row.AvgUs})
		}
		if row.MBps > 0 {
			bw = append(bw, plotter.XY{X: float64(row.Size), Y: row.MBps})
		}
	}
	if len(lat) < 1 {
		return fmt.Errorf("commbench: --plot: the %s test has no sizes to plot", r.Test)
	}
	title := fmt.Sprintf("commbench %s, %d ranks", r.Test, r.Ranks)
	left, err := panel(title+": latency", "latency (us)", lat, color.RGBA{R: 200, G: 40, B: 40, A: 255})
	if err != nil {
		return err
	}
	right, err := panel(title+": bandwidth", "bandwidth (MB/s)", bw, color.RGBA{R: 30, G: 90, B: 200, A: 255})
	if err != nil {
		return err
	}
	img := vgimg.New(16*vg.Inch, 6*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 3, PadY: vg.Inch / 6, PadTop: vg.Inch / 6, PadBottom: vg.Inch / 6, PadLeft: vg.Inch / 6, PadRight: vg.Inch / 6}
	canvases := plot.Align([][]*plot.Plot{{left, right}}, tiles, dc)
	left.Draw(canvases[0][0])
	right.Draw(canvases[0][1])
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("commbench: --plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("commbench: --plot %s: %w", file, err)
	}
	return f.Close()
}

func panel(title, ylabel string, xy plotter.XYs, c color.Color) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	if len(xy) == 0 {
		return p, nil
	}
	line, points, err := plotter.NewLinePoints(xy)
	if err != nil {
		return nil, fmt.Errorf("commbench: plot: %w", err)
	}
	line.Color = c
	line.Width = vg.Points(2)
	points.Color = c
	points.Shape = draw.CircleGlyph{}
	p.Add(line, points)
	return p, nil
}
