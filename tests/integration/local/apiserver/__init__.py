"""Tests of the local API server that run kubectl against it or serve it on a loopback port."""
