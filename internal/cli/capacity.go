package cli

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/text"
)

// newCapacityCmd builds `atelier capacity`.
func newCapacityCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "capacity",
		Short: "Show the machine's capacity: what is booked, used, held and waiting",
		Long: `Show the machine that training jobs and service instances share: per resource
what it has (allocatable: declared in the server config or detected), what may
be booked (bookable = allocatable × overcommit; GPUs are never overcommitted),
what the holders requested and their limits, and what their cgroups use now;
then who holds what and who waits, and why.

A flavor's cpu, memory and gpu are limits, which the cgroup enforces; what a
workload books is its request: a training job its limits, a service instance
(and a notebook) a small share of CPU and memory (the server config's
requests). Your own workloads are listed by name; other users' are added up
(an admin sees every workload).`,
		Example: `  atelier capacity
  atelier capacity -o json | jq '.waiting[] | .reason'`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.Capacity(cmd.Context(), 0, 0)
			if err != nil {
				return err
			}
			return a.show(v, func(w io.Writer) { capacityTable(w, v) })
		},
	}
}

// capacityTable writes the table view of GET /api/v1/capacity.
func capacityTable(w io.Writer, c *api.Capacity) {
	row(w, "RESOURCE", "ALLOCATABLE", "OVERCOMMIT", "BOOKABLE", "REQUESTED", "LIMITS", "USED")
	for _, r := range c.Resources {
		over, used := ratioCell(r.Overcommit), "not measured"
		if r.Resource == api.ResourceGPU {
			over = "never"
		}
		if r.Used != nil {
			used = resAmount(r.Resource, *r.Used)
		}
		row(w, r.Resource, resAmount(r.Resource, r.Allocatable)+" ("+orDash(r.Source)+")", over, resAmount(r.Resource, r.Bookable),
			resAmount(r.Resource, r.Requested), resAmount(r.Resource, r.Limits), used)
	}
	fmt.Fprintln(w)
	if len(c.Holders) == 0 {
		fmt.Fprintln(w, "HOLDERS: none")
	} else {
		row(w, "HOLDER", "NAME", "OWNER", "ID", "REQUEST", "LIMIT", "GPUS", "USED")
		for _, h := range c.Holders {
			used := "-"
			if h.Used != nil {
				used = cpuCell(h.Used.CPU) + " CPU, " + text.Bytes(h.Used.Memory)
			}
			row(w, h.Kind, h.Name, h.Owner, h.ID, amountCell(h.Request), amountCell(h.Limit), gpuList(h.GPUs), used)
		}
	}
	fmt.Fprintln(w)
	if len(c.Waiting) == 0 {
		fmt.Fprintln(w, "WAITING: none")
	} else {
		row(w, "WAITING", "NAME", "OWNER", "ID", "REQUEST", "POSITION", "REASON")
		for _, q := range c.Waiting {
			reason := q.Reason
			if q.NeverFits {
				reason = "NEVER FITS: " + strings.TrimPrefix(reason, "never: ")
			}
			row(w, q.Kind, q.Name, q.Owner, q.ID, amountCell(q.Request), strconv.Itoa(q.Position), reason)
		}
	}
	if o := c.Others; o != nil && (o.Holders > 0 || o.Waiting > 0) {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Other users: %s requesting %s (limits %s); %d waiting for %s\n", text.Count(o.Holders, "holder"),
			amountCell(o.Request), amountCell(o.Limit), o.Waiting, amountCell(o.WaitingRequest))
	}
	fmt.Fprintln(w)
	for _, r := range c.Requests {
		fmt.Fprintf(w, "Requests: %s.\n", r.Rule)
	}
	if c.UsedNote != "" {
		fmt.Fprintf(w, "Used: %s.\n", c.UsedNote)
	}
}

// resAmount formats an amount of a resource: cores, bytes or devices.
func resAmount(resource string, v float64) string {
	switch resource {
	case api.ResourceMemory:
		return text.Bytes(int64(v))
	case api.ResourceCPU:
		return cpuCell(v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// amountCell formats a request or limit: "0.25 CPU, 512.0 MiB", with
// ", 1 GPU" when it has GPUs.
func amountCell(a api.CapacityAmount) string {
	s := cpuCell(a.CPU) + " CPU, " + text.Bytes(a.Memory)
	if a.GPU > 0 {
		s += ", " + text.Count(a.GPU, "GPU")
	}
	return s
}

// cpuCell formats cores with at most 2 decimals.
func cpuCell(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// ratioCell formats an overcommit ratio: "2.0×".
func ratioCell(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 1, 64) + "×"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + "×"
}

func gpuList(ds []int) string {
	if len(ds) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(ds))
	for _, d := range slices.Sorted(slices.Values(ds)) {
		parts = append(parts, strconv.Itoa(d))
	}
	return strings.Join(parts, ",")
}
