package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"path"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/dataset/format"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/text"
)

// Predictor calls a deployed service for a principal, in-process
// (gateway.Gateway implements it).
type Predictor interface {
	Predict(ctx context.Context, p *auth.Principal, serviceID, contentType string, body []byte) (int, []byte, error)
}

// Auto-labeling limits.
const (
	DefaultAutolabelLimit = 10_000
	MaxAutolabelImage     = 32 << 20
	autolabelJobs         = 4
)

// Autolabel sends the unlabelled samples of the dataset's current version
// (those without a label and without a proposal) to a deployed service, as
// the caller, the way ModelArts clients call it (multipart, field
// "images"), and stores each answer at or above the threshold as a
// proposal that a person accepts or rejects. It reads the common answer
// shapes: {"predicted_label", "scores"} and {"label", "confidence"} for
// classification, {"detection_classes", "detection_boxes",
// "detection_scores"} for detection.
func (s *Service) Autolabel(ctx context.Context, p *auth.Principal, ref string, req *api.AutolabelRequest) (*api.AutolabelResult, error) {
	const op errs.Op = "dataset.Autolabel"
	start := time.Now()
	r, d, err := s.load(ctx, op, p, ref, "Update")
	if err != nil {
		return nil, err
	}
	if s.o.Predictor == nil {
		return nil, errs.E(op, errs.Unavailable, CodeAutolabel, "auto-labeling needs online services, which this server does not run")
	}
	if req.ServiceID == "" || req.Threshold < 0 || req.Threshold > 1 || req.Limit < 0 {
		return nil, errs.E(op, errs.Invalid, CodeInvalidRequest, "invalid autolabel request: service_id is required, threshold is from 0 to 1",
			errs.Hint("atelier dataset autolabel NAME --service SERVICE [--threshold 0.9]"))
	}
	limit := req.Limit
	if limit == 0 || limit > DefaultAutolabelLimit {
		limit = DefaultAutolabelLimit
	}
	ix, err := s.index(ctx, op, r)
	if err != nil {
		return nil, err
	}
	drafts, err := s.drafts(ctx, r.ID, "", nil)
	if err != nil {
		return nil, errs.E(op, err)
	}
	var todo []*indexed
	for i := range ix.samples {
		it := &ix.samples[i]
		rec := drafts[it.key]
		if labeled(it.ann) && (rec == nil || rec.Human == nil) || rec != nil && (rec.Proposal != nil || rec.Human != nil && labeled(*rec.Human)) {
			continue
		}
		if len(todo) == limit {
			break
		}
		todo = append(todo, it)
	}
	bucket, prefix := source(d)
	user := obs.As(p)
	out := &api.AutolabelResult{}
	var mu sync.Mutex
	failed := func(key string, err error) {
		mu.Lock()
		defer mu.Unlock()
		out.Failed++
		if out.FirstError == "" {
			out.FirstError = key + ": " + errs.UserMessage(err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(autolabelJobs)
	for _, it := range todo {
		g.Go(func() error {
			body, ctype, err := s.imageForm(gctx, user, bucket, prefix+it.key)
			if err != nil {
				failed(it.key, err)
				return nil
			}
			status, answer, err := s.o.Predictor.Predict(gctx, p, req.ServiceID, ctype, body)
			mu.Lock()
			out.Sent++
			mu.Unlock()
			if err == nil && status != 200 {
				err = errs.E(op, CodeAutolabel, fmt.Sprintf("the service answered %d: %s", status, text.Clip(string(answer), 300)))
			}
			if err != nil {
				failed(it.key, err)
				if status == 401 || status == 403 || status == 404 {
					return errs.E(op, errs.Invalid, CodeAutolabel, fmt.Sprintf("service %s cannot be called: %s", req.ServiceID, text.Clip(string(answer), 300)),
						errs.Hint("`atelier service list` shows your running services; call it with the id"))
				}
				return nil
			}
			ann, conf, err := parseAnswer(format.Type(d.DatasetType), answer, req.Threshold)
			if err != nil {
				failed(it.key, err)
				return nil
			}
			if conf < req.Threshold || !labeled(ann) {
				mu.Lock()
				out.BelowThresh++
				mu.Unlock()
				return nil
			}
			if _, err := s.updateLabel(gctx, op, r, d, it, func(rec *labelRecord) error {
				rec.Proposal = &api.DatasetProposal{DatasetAnnotations: ann, Confidence: conf, ServiceID: req.ServiceID, CreateTime: s.o.Now().UnixMilli()}
				return nil
			}); err != nil {
				return err
			}
			mu.Lock()
			out.Proposed++
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out.ElapsedMsec = time.Since(start).Milliseconds()
	return out, nil
}

// imageForm is a multipart body with the object as the file "images".
func (s *Service) imageForm(ctx context.Context, user *obs.Caller, bucket, key string) ([]byte, string, error) {
	res, err := s.obs.GetObject(ctx, user, bucket, key, obs.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	if res.Object.Size > MaxAutolabelImage {
		return nil, "", errs.E("dataset.Autolabel", errs.Invalid, CodeAutolabel, fmt.Sprintf("the image is %s: at most %s are sent",
			text.Bytes(res.Object.Size), text.Bytes(MaxAutolabelImage)))
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("images", path.Base(key))
	if err != nil {
		return nil, "", err
	}
	if _, err := io.Copy(fw, io.LimitReader(res.Body, MaxAutolabelImage)); err != nil {
		return nil, "", err
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), mw.FormDataContentType(), nil
}

// flexFloat is a score written as a number or a string ("0.98").
type flexFloat float64

func (f *flexFloat) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := strconv.ParseFloat(s, 64)
		*f = flexFloat(v)
		return err
	}
	var v float64
	err := json.Unmarshal(b, &v)
	*f = flexFloat(v)
	return err
}

// parseAnswer reads a service's answer as annotations and a confidence.
func parseAnswer(t format.Type, answer []byte, threshold float64) (api.DatasetAnnotations, float64, error) {
	var a struct {
		PredictedLabel string            `json:"predicted_label"`
		Scores         [][2]flexFloatAny `json:"scores"`
		Label          string            `json:"label"`
		Confidence     *flexFloat        `json:"confidence"`
		Score          *flexFloat        `json:"score"`
		Classes        []string          `json:"detection_classes"`
		Boxes          [][]float64       `json:"detection_boxes"`
		BoxScores      []flexFloat       `json:"detection_scores"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return api.DatasetAnnotations{}, 0, errs.E("dataset.parseAnswer", errs.Invalid, CodeAutolabel,
			"the answer is not a JSON object of a known shape: "+text.Clip(string(answer), 200))
	}
	if t == format.ObjectDetection {
		if len(a.Classes) != len(a.Boxes) || len(a.BoxScores) != len(a.Boxes) {
			return api.DatasetAnnotations{}, 0, errs.E("dataset.parseAnswer", errs.Invalid, CodeAutolabel,
				"detection_classes, detection_boxes and detection_scores differ in length")
		}
		var ann api.DatasetAnnotations
		best := 0.0
		for i, b := range a.Boxes {
			sc := float64(a.BoxScores[i])
			if len(b) != 4 || sc < threshold {
				continue
			}
			// ModelArts answers [ymin, xmin, ymax, xmax].
			box := api.DatasetBox{Label: a.Classes[i], XMin: b[1], YMin: b[0], XMax: b[3], YMax: b[2]}
			if checkAnnotations(t, &api.DatasetAnnotations{Boxes: []api.DatasetBox{box}}) != "" {
				continue
			}
			ann.Boxes = append(ann.Boxes, box)
			best = max(best, sc)
		}
		return ann, best, nil
	}
	label, conf := a.PredictedLabel, -1.0
	if label == "" {
		label = a.Label
	}
	switch {
	case a.Confidence != nil:
		conf = float64(*a.Confidence)
	case a.Score != nil:
		conf = float64(*a.Score)
	}
	if len(a.Scores) > 0 {
		type ls struct {
			l string
			s float64
		}
		var all []ls
		for _, p := range a.Scores {
			all = append(all, ls{p[0].s, p[1].f})
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].s > all[j].s })
		if label == "" {
			label = all[0].l
		}
		for _, x := range all {
			if x.l == label && conf < 0 {
				conf = x.s
			}
		}
	}
	if label == "" {
		return api.DatasetAnnotations{}, 0, errs.E("dataset.parseAnswer", errs.Invalid, CodeAutolabel,
			"the answer names no label (predicted_label or label): "+text.Clip(string(answer), 200))
	}
	if conf < 0 {
		conf = 1 // a bare label is as sure as the service says nothing against
	}
	ann := api.DatasetAnnotations{Tags: []string{label}}
	if why := checkAnnotations(t, &ann); why != "" {
		return api.DatasetAnnotations{}, 0, errs.E("dataset.parseAnswer", errs.Invalid, CodeAutolabel, "the answer's label: "+why)
	}
	return ann, conf, nil
}

// flexFloatAny is one element of a ["label", score] pair: the label as a
// string, the score as a number or a numeric string.
type flexFloatAny struct {
	s string
	f float64
}

func (x *flexFloatAny) UnmarshalJSON(b []byte) error {
	if json.Unmarshal(b, &x.s) == nil {
		x.f, _ = strconv.ParseFloat(x.s, 64)
		return nil
	}
	return json.Unmarshal(b, &x.f)
}
