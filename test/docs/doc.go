// Package docs holds tests that keep the user documentation true to the
// code: every error code the code can return is documented.
package docs
