//! cloudscale.ch API client (being written).
