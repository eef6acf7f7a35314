// Package python ships Atelier's Python packages inside the atelier binary:
// moxing (`import moxing as mox`; mox.file.* on local paths and obs:// or
// s3:// URLs, compatible with Huawei ModelArts MoXing, with its own SigV4
// S3 client) and atelier (atelier.report for training metrics). Both use
// the Python standard library only, so they run in any job environment
// (Python 3.8 or later). atelier.notebook_server, the launcher of a
// notebook's Jupyter, imports Jupyter's notebook package as well.
//
// The Python tree is embedded with go:embed; every top-level directory of
// this package except tests is a Python package and is embedded, so a new
// package (model_service, …) needs no change here. Tests, __pycache__,
// compiled files and dot files are left out.
//
// Extract writes the tree once per content version to
// <dir>/<first 16 hex digits of its SHA-256>/ (atomically: into a
// temporary directory, then renamed), which jobs, service instances and
// notebooks put on PYTHONPATH.
//
// Python tests: /usr/bin/python3 -m unittest discover -s python/tests
// (tests/remote_obs.py runs against a live server; see test/e2e).
package python
