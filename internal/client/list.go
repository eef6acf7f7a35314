package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// PageSize is the page size All asks for.
const PageSize = 500

// ListOptions selects one page of a list (api.ListOptions). Zero values
// leave the choice to the server (offset 0, its default limit).
type ListOptions = api.ListOptions

// pageQuery adds the offset and limit query parameters of o to q (a new
// Values when q is nil) and returns it.
func pageQuery(q url.Values, o ListOptions) url.Values {
	if q == nil {
		q = url.Values{}
	}
	if o.Offset > 0 {
		q.Set("offset", strconv.Itoa(o.Offset))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// ListFunc fetches one page of a list; every List method of Client, bound
// to its other arguments, is one.
type ListFunc[T any] func(ctx context.Context, opts ListOptions) (*api.List[T], error)

// All fetches every page of list, PageSize items at a time, and returns them
// as one api.List whose Total is the server's last reported total and whose
// Count is the number of items fetched.
func All[T any](ctx context.Context, list ListFunc[T]) (*api.List[T], error) {
	out := &api.List[T]{Items: []T{}}
	for {
		page, err := list(ctx, ListOptions{Offset: len(out.Items), Limit: PageSize})
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, page.Items...)
		out.Total = page.Total
		if len(page.Items) == 0 || len(out.Items) >= page.Total {
			break
		}
	}
	out.Count = len(out.Items)
	return out, nil
}

// getList fetches one page of the list at path.
func getList[T any](ctx context.Context, c *Client, op errs.Op, path string, q url.Values, opts ListOptions) (*api.List[T], error) {
	out := &api.List[T]{}
	if err := c.do(ctx, op, call{method: "GET", path: path, query: pageQuery(q, opts), out: out}); err != nil {
		return nil, err
	}
	if out.Items == nil {
		out.Items = []T{}
	}
	return out, nil
}
