package commbench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

var titles = map[string]string{
	"latency":   "Latency Test",
	"bw":        "Bandwidth Test",
	"bibw":      "Bi-Directional Bandwidth Test",
	"allreduce": "Allreduce Latency Test",
	"bcast":     "Broadcast Latency Test",
	"reduce":    "Reduce Latency Test",
	"allgather": "Allgather Latency Test",
	"alltoall":  "All-to-All Personalized Exchange Latency Test",
	"barrier":   "Barrier Latency Test",
}

// WriteTable prints the OSU-style table.
func (r *Result) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "# gorun commbench %s\n", titles[r.Test])
	fmt.Fprintf(w, "# Ranks: %d  Datatype: %s\n", r.Ranks, r.Datatype)
	var err error
	switch r.Test {
	case "latency":
		fmt.Fprintf(w, "%-10s%20s\n", "# Size", "Latency (us)")
		for _, row := range r.Rows {
			_, err = fmt.Fprintf(w, "%-10d%20.2f\n", row.Size, row.AvgUs)
		}
	case "bw", "bibw":
		fmt.Fprintf(w, "%-10s%20s\n", "# Size", "Bandwidth (MB/s)")
		for _, row := range r.Rows {
			_, err = fmt.Fprintf(w, "%-10d%20.2f\n", row.Size, row.MBps)
		}
	case "barrier":
		fmt.Fprintf(w, "%-20s%20s%20s%12s\n", "# Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations")
		for _, row := range r.Rows {
			_, err = fmt.Fprintf(w, "%20.2f%20.2f%20.2f%12d\n", row.AvgUs, row.MinUs, row.MaxUs, row.Iters)
		}
	default:
		fmt.Fprintf(w, "%-10s%18s%18s%18s%12s%18s\n", "# Size", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations", "Bandwidth (MB/s)")
		for _, row := range r.Rows {
			_, err = fmt.Fprintf(w, "%-10d%18.2f%18.2f%18.2f%12d%18.2f\n", row.Size, row.AvgUs, row.MinUs, row.MaxUs, row.Iters, row.MBps)
		}
	}
	return err
}

// WriteCSV prints one line per size with a header.
func (r *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"test", "ranks", "size", "avg_us", "min_us", "max_us", "mb_per_s", "iterations"})
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	for _, row := range r.Rows {
		cw.Write([]string{r.Test, strconv.Itoa(r.Ranks), strconv.Itoa(row.Size), f(row.AvgUs), f(row.MinUs), f(row.MaxUs), f(row.MBps), strconv.Itoa(row.Iters)})
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON prints the result as one JSON object.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
