package model

import (
	"reflect"
	"strings"
	"testing"
)

// seedHandler is a ModelArts seed-style PyTorch handler.
const seedHandler = `# -*- coding: utf-8 -*-
import os
import torch
from PIL import Image
from model_service.pytorch_model_service import PTServingBaseService

CLASSES = ['cat', 'dog']


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)


class ImageClassifier(PTServingBaseService):
    """Classifies images.

class NotAClass(PTServingBaseService):  <- inside the docstring
"""

    def __init__(self, model_name, model_path):
        super(ImageClassifier, self).__init__(model_name, model_path)
        self.model = Net()

    def _preprocess(self, data):
        class Inner(PTServingBaseService):  # nested: not top level
            pass
        return data
`

func TestScanClasses(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []Class
	}{
		{"seed handler", seedHandler, []Class{
			{Name: "Net", Line: 10, Bases: []string{"torch.nn.Module"}},
			{Name: "ImageClassifier", Line: 16, Bases: []string{"PTServingBaseService"}},
		}},
		{"no bases", "class A:\n    pass\nclass B():\n    pass\n", []Class{{Name: "A", Line: 1}, {Name: "B", Line: 3}}},
		{"multi-line bases with comments", "class H(\n    base.SingleNodeService,  # the base\n    Mixin,\n    metaclass=Meta,\n):\n    pass\n",
			[]Class{{Name: "H", Line: 1, Bases: []string{"base.SingleNodeService", "Mixin", "metaclass=Meta"}}}},
		{"strings and comments", "x = '''\nclass A(BaseService):\n'''\n# class B(BaseService):\ns = \"class C(BaseService): \\\" \"\nclass D(BaseService): pass\n",
			[]Class{{Name: "D", Line: 6, Bases: []string{"BaseService"}}}},
		{"inside brackets", "x = [\nclass_ for class_ in y,\n]\nfoo(\nclass A(B): pass\n)\nclass E(F): pass\n",
			[]Class{{Name: "E", Line: 7, Bases: []string{"F"}}}},
		{"continuation line", "x = 1 + \\\nclass_a\nclass G(H): pass\n# comment \\\nclass I(J): pass\n",
			[]Class{{Name: "G", Line: 3, Bases: []string{"H"}}, {Name: "I", Line: 5, Bases: []string{"J"}}}},
		{"generic and call bases", "class K(Generic[T], make_base(1, 2)): pass\n",
			[]Class{{Name: "K", Line: 1, Bases: []string{"Generic[T]", "make_base(1, 2)"}}}},
		{"not a class keyword", "classes = 1\nclassify()\nclass\tTab(X): pass\n", []Class{{Name: "Tab", Line: 3, Bases: []string{"X"}}}},
		{"unterminated", "class L(BaseService", []Class{{Name: "L", Line: 1, Bases: []string{"BaseService"}}}},
		{"unterminated string", "s = 'abc\nclass M(N): pass\n", []Class{{Name: "M", Line: 2, Bases: []string{"N"}}}},
		{"CRLF", "class A(B):\r\n    pass\r\nclass C(D):\r\n    pass\r\n", []Class{{Name: "A", Line: 1, Bases: []string{"B"}}, {Name: "C", Line: 3, Bases: []string{"D"}}}},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ScanClasses([]byte(tc.src)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ScanClasses = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestHandlerClasses(t *testing.T) {
	names := func(cs []Class) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"seed", seedHandler, []string{"ImageClassifier"}},
		{"tf", "class M(tfserving_model_service.TfServingBaseService): pass\n", []string{"M"}},
		{"single node", "from model_service.model_service import SingleNodeService\nclass M(SingleNodeService): pass\n", []string{"M"}},
		{"ML base", "class M(XgSklServingBaseService): pass\n", []string{"M"}},
		{"through a class of the file", "class Base(PTServingBaseService): pass\nclass Mine(Base): pass\nclass Other(object): pass\n", []string{"Base", "Mine"}},
		{"two", "class A(BaseService): pass\nclass B(SingleNodeService): pass\n", []string{"A", "B"}},
		{"none", "class A(object): pass\nclass B(A): pass\n", nil},
		{"keyword only", "class A(metaclass=BaseService): pass\n", nil},
		{"mixin first", "class A(Mixin, PTServingBaseService): pass\n", []string{"A"}},
		{"redefined", "class A(BaseService): pass\nclass A(BaseService): pass\n", []string{"A"}},
	} {
		if got := names(HandlerClasses(ScanClasses([]byte(tc.src)))); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: handler classes %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCheckHandler(t *testing.T) {
	for _, tc := range []struct {
		src, modelType, want string
	}{
		{seedHandler, TypePyTorch, ""},
		{"class A(object): pass\n", TypePyTorch, "customize_service.py: handler class: no handler class: expected a class that subclasses PTServingBaseService (from model_service.pytorch_model_service)"},
		{"", TypeTensorFlow, "no handler class: expected a class that subclasses TfServingBaseService (from model_service.tfserving_model_service)"},
		{"", TypeScikitLearn, "no handler class: expected a class that subclasses SingleNodeService (from model_service.model_service)"},
		{"class A(BaseService): pass\n\nclass B(A): pass\n", TypePyTorch, "customize_service.py: handler class: 2 handler classes: A (line 1), B (line 3): keep exactly one"},
	} {
		ps := checkHandler([]byte(tc.src), tc.modelType)
		switch {
		case tc.want == "" && len(ps) > 0:
			t.Errorf("%.30q: unexpected problems %v", tc.src, ps)
		case tc.want != "" && (len(ps) != 1 || !strings.Contains(ps[0].String(), tc.want)):
			t.Errorf("%.30q: problems %v, want %q", tc.src, ps, tc.want)
		}
	}
}

func FuzzScanClasses(f *testing.F) {
	for _, s := range []string{seedHandler, "class A(B):\n", "'''", "class (", "class A(\"\"\"", "\\\nclass A(B): pass", "class A(B, (C, D)):"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		lines := strings.Count(string(src), "\n") + 1
		for _, c := range ScanClasses(src) {
			if c.Name == "" || c.Line < 1 || c.Line > lines {
				t.Fatalf("bad class %+v in %d lines", c, lines)
			}
		}
		_ = checkHandler(src, TypePyTorch)
	})
}
