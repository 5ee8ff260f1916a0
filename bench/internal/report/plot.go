package report

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

var (
	colSkiff   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colFloor   = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	colKubelet = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
)

// cdf returns the empirical distribution of samples as (x = latency,
// y = fraction of pods at or below it) steps.
func cdf(samples []float64) plotter.XYs {
	s := slices.Clone(samples)
	slices.Sort(s)
	xy := make(plotter.XYs, 0, 2*len(s))
	for i, v := range s {
		xy = append(xy, plotter.XY{X: v, Y: float64(i) / float64(len(s))})
		xy = append(xy, plotter.XY{X: v, Y: float64(i+1) / float64(len(s))})
	}
	return xy
}

// StartupPlot draws the startup latency distributions (empirical CDFs).
func StartupPlot(s *Startup) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Startup latency, init + app (%d pods)", s.Pods)
	p.X.Label.Text = "manifest -> app container running (s)"
	p.Y.Label.Text = "fraction of pods"
	p.Y.Min, p.Y.Max = 0, 1
	p.X.Min = 0
	p.Add(plotter.NewGrid())
	for _, c := range []struct {
		name string
		s    *Series
		col  color.Color
	}{{"skiff", s.Skiff, colSkiff}, {"CRI floor", s.Floor, colFloor}, {"kubelet", s.Kubelet, colKubelet}} {
		if c.s == nil || len(c.s.Samples) == 0 {
			continue
		}
		l, err := plotter.NewLine(cdf(c.s.Samples))
		if err != nil {
			return nil, fmt.Errorf("startup plot %s: %w", c.name, err)
		}
		l.Color, l.Width = c.col, vg.Points(2)
		p.Add(l)
		p.Legend.Add(c.name, l)
	}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.YOffs = vg.Points(30)
	return p, nil
}

// scaleLine adds one series (x = pods) to p; points with y < 0 are skipped.
func scaleLine(p *plot.Plot, name string, col color.Color, sc []Scale, y func(Scale) float64) error {
	var xy plotter.XYs
	for _, s := range sc {
		if v := y(s); v >= 0 {
			xy = append(xy, plotter.XY{X: float64(s.Pods), Y: v})
		}
	}
	if len(xy) == 0 {
		return nil
	}
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return fmt.Errorf("scale plot %s: %w", name, err)
	}
	l.Color, pts.Color, l.Width = col, col, vg.Points(2)
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}

// ScalePlots draws the scale curve: time to all running, the agent's
// steady CPU and its RSS, each against the pod count.
func ScalePlots(sc []Scale) ([]*plot.Plot, error) {
	neg := func(a *Agent, f func(*Agent) float64) float64 {
		if a == nil {
			return -1
		}
		return f(a)
	}
	type series struct {
		name string
		col  color.Color
		y    func(Scale) float64
	}
	panels := []struct {
		title, ylabel string
		series        []series
	}{
		{"Time to all pods running", "s", []series{
			{"skiff", colSkiff, func(s Scale) float64 { return neg(s.Skiff, func(a *Agent) float64 { return a.AllRunningS }) }},
			{"CRI floor", colFloor, func(s Scale) float64 {
				if s.Floor == nil {
					return -1
				}
				return s.Floor.AllRunningS
			}},
			{"kubelet", colKubelet, func(s Scale) float64 { return neg(s.Kubelet, func(a *Agent) float64 { return a.AllRunningS }) }},
		}},
		{"Agent CPU at steady state", "% of one core", []series{
			{"skiff", colSkiff, func(s Scale) float64 { return neg(s.Skiff, func(a *Agent) float64 { return a.Steady.CPUPercent }) }},
			{"kubelet", colKubelet, func(s Scale) float64 { return neg(s.Kubelet, func(a *Agent) float64 { return a.Steady.CPUPercent }) }},
		}},
		{"Agent RSS at steady state (max)", "MB", []series{
			{"skiff", colSkiff, func(s Scale) float64 { return neg(s.Skiff, func(a *Agent) float64 { return a.Steady.RSSMaxMB }) }},
			{"kubelet", colKubelet, func(s Scale) float64 { return neg(s.Kubelet, func(a *Agent) float64 { return a.Steady.RSSMaxMB }) }},
		}},
	}
	var out []*plot.Plot
	for _, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "pods"
		p.Y.Label.Text = pn.ylabel
		p.X.Min, p.Y.Min = 0, 0
		p.Add(plotter.NewGrid())
		p.Legend.Top, p.Legend.Left = true, true
		for _, s := range pn.series {
			if err := scaleLine(p, s.name, s.col, sc, s.y); err != nil {
				return nil, err
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// WritePlots writes plots side by side, each w x h, into one file: PNG
// when path ends in ".png", SVG otherwise.
func WritePlots(path string, w, h vg.Length, plots ...*plot.Plot) error {
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if strings.HasSuffix(path, ".png") {
		c = vgimg.PngCanvas{Canvas: vgimg.New(w*vg.Length(len(plots)), h)}
	} else {
		c = vgsvg.New(w*vg.Length(len(plots)), h)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	grid := [][]*plot.Plot{plots}
	canvases := plot.Align(grid, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}
