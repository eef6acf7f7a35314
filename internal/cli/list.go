package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/client"
)

// listHelp is appended to the long help of every list command.
const listHelp = `
Without --offset and --limit every page is fetched. With either, one page is
fetched and, in table output, a line on stderr says which part of the list it
is. With -o json or -o yaml the API list object {"total", "count", "items"}
is printed.`

// listFlags are the paging flags of a list command.
type listFlags struct {
	offset, limit int
}

// register adds --offset and --limit to cmd.
func (l *listFlags) register(cmd *cobra.Command) {
	cmd.Flags().IntVar(&l.offset, "offset", 0, "skip this many items (fetches one page)")
	cmd.Flags().IntVar(&l.limit, "limit", 0, "fetch at most this many items (default: all)")
}

// fetchList fetches the page the flags select, or every page.
func fetchList[T any](ctx context.Context, a *app, l listFlags, list client.ListFunc[T]) (*api.List[T], error) {
	if l.offset < 0 || l.limit < 0 {
		return nil, usagef("--offset and --limit must not be negative")
	}
	if l.offset == 0 && l.limit == 0 {
		return client.All(ctx, list)
	}
	page, err := list(ctx, client.ListOptions{Offset: l.offset, Limit: l.limit})
	if err != nil {
		return nil, err
	}
	if a.output == formatTable && page.Total > 0 && len(page.Items) < page.Total {
		first := min(l.offset+1, page.Total)
		a.note("showing items %d-%d of %d; page with --offset and --limit", first, l.offset+len(page.Items), page.Total)
	}
	return page, nil
}

// bindUser binds the user argument of a per-user list method.
func bindUser[T any](user string, list func(context.Context, string, client.ListOptions) (*api.List[T], error)) client.ListFunc[T] {
	return func(ctx context.Context, opts client.ListOptions) (*api.List[T], error) {
		return list(ctx, user, opts)
	}
}
