package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
)

// newUsageCmd builds `atelier usage`.
func newUsageCmd(a *app) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Show metered instance time of services and training jobs, with its cost",
		Long: `Show how long services' instances and training jobs ran, per flavor, and what
that costs when the server's flavors have a price_per_hour: instance hours ×
price. Your own usage; an admin sees every user's with --all.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			u, err := c.Usage(cmd.Context(), all)
			if err != nil {
				return err
			}
			return a.show(u, func(w io.Writer) { usageTable(w, u) })
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every user's usage (admins)")
	return cmd
}

func usageTable(w io.Writer, u *api.Usage) {
	if len(u.Items) == 0 {
		fmt.Fprintln(w, "no usage yet")
		return
	}
	row(w, "KIND", "NAME", "ID", "FLAVOR", "INSTANCE HOURS", "COST")
	var secs float64
	for _, it := range u.Items {
		secs += it.InstanceSeconds
		row(w, it.Kind, orDash(it.Name), it.ResourceID, orDash(it.Flavor), hours(it.InstanceSeconds), cost(it.Cost))
	}
	row(w, "TOTAL", "", "", "", hours(secs), cost(u.TotalCost))
}

func hours(secs float64) string { return strconv.FormatFloat(secs/3600, 'f', 4, 64) }

func cost(c float64) string {
	if c == 0 {
		return "-"
	}
	return strconv.FormatFloat(c, 'f', 4, 64)
}
