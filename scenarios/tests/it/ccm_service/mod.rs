//! The service controller end to end, one test binary in four parts: which load balancer is
//! a Service's (`ownership`), port edits checked against every configuration the data plane
//! applied (`port_edits`), changes that wait (`waits`), and Service settings and messages
//! (`settings`). A whole CCM in-process on the testbed (`scenarios::testbed::ccm_bed`) each time.

mod ownership;
mod port_edits;
mod settings;
mod waits;
