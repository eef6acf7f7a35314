package model

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/text"
)

// Limits of an import request.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 256
	MaxAlgorithmLen   = 36
)

var (
	nameRe    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })
	versionRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})$`)
	})
)

// ValidateName returns why name is not a model name, or "".
func ValidateName(name string) string {
	rule := fmt.Sprintf("use 1-%d letters, digits, '_' or '-'", MaxNameLen)
	switch {
	case name == "":
		return "required: " + rule
	case utf8.RuneCountInString(name) > MaxNameLen:
		return fmt.Sprintf("%q is %d characters long: %s", text.Clip(name, 80), utf8.RuneCountInString(name), rule)
	case !nameRe().MatchString(name):
		return fmt.Sprintf("%q is not a valid name: %s", text.Clip(name, 80), rule)
	}
	return ""
}

// ValidateVersion returns why v is not a model version, or "". A version is
// Digit.Digit.Digit (each part 0 or a number without leading zeros, at most
// 9 digits), e.g. 1.0.0.
func ValidateVersion(v string) string {
	switch {
	case v == "":
		return "required: a version such as 1.0.0"
	case !versionRe().MatchString(v):
		return fmt.Sprintf("%q is not a version: write three numbers without leading zeros, e.g. 1.0.0 or 2.10.3", text.Clip(v, 40))
	}
	return ""
}

// Model types.
const (
	TypeTensorFlow  = "TensorFlow"
	TypeMXNet       = "MXNet"
	TypeCaffe       = "Caffe"
	TypeSparkMLlib  = "Spark_MLlib"
	TypeScikitLearn = "Scikit_Learn"
	TypeXGBoost     = "XGBoost"
	TypePyTorch     = "PyTorch"
	TypeMindSpore   = "MindSpore"
	TypeCustom      = "Custom"
	TypeImage       = "Image"
	TypeTemplate    = "Template"
)

// Types are the model types Atelier imports: each runs a Python handler
// (customize_service.py) in an engine. Image (a container image) and
// Template (a ModelArts model template) are recognised but not supported.
var Types = []string{TypeTensorFlow, TypeMXNet, TypeCaffe, TypeSparkMLlib, TypeScikitLearn, TypeXGBoost,
	TypePyTorch, TypeMindSpore, TypeCustom}

// unsupportedTypes are ModelArts types Atelier cannot run.
var unsupportedTypes = []string{TypeImage, TypeTemplate}

// canonicalType returns the model type t names (case-insensitively), and
// why it cannot be used ("" when it can).
func canonicalType(t string) (string, string) {
	for _, c := range Types {
		if strings.EqualFold(c, t) {
			return c, ""
		}
	}
	for _, c := range unsupportedTypes {
		if strings.EqualFold(c, t) {
			return c, fmt.Sprintf("model_type %s is not supported: Atelier runs Python handlers (customize_service.py); use one of %s", c, strings.Join(Types, ", "))
		}
	}
	return "", fmt.Sprintf("%q is not a model type: use one of %s", text.Clip(t, 40), strings.Join(Types, ", "))
}

// handlerBase is the base class a handler of the model type subclasses, and
// the module it comes from.
func handlerBase(modelType string) (class, module string) {
	switch modelType {
	case TypePyTorch:
		return "PTServingBaseService", "model_service.pytorch_model_service"
	case TypeTensorFlow:
		return "TfServingBaseService", "model_service.tfserving_model_service"
	}
	return "SingleNodeService", "model_service.model_service"
}

// isHandlerBase reports whether a base class name (its last dotted part) is
// one of the model_service handler bases.
func isHandlerBase(name string) bool {
	return slices.Contains([]string{"PTServingBaseService", "TfServingBaseService", "SingleNodeService", "BaseService"}, name) ||
		strings.HasSuffix(name, "BaseService")
}
