"""Switch stand-ins and test-only models: what tests and offline experiments put where a real
switch or network would be. Not installed (pyproject's package find includes only p4reduce), and
never imported by the product packages under p4reduce (`make lint` checks it).

    switch_model      SwitchModel: the aggregation state machine of p4src, register for register
    fakeswitch        FakeSwitch: SwitchModel over UDP on loopback, with seeded impairments
    p4sim_udp         P4SimUdpSwitch: the real program on p4sim's engine over UDP on loopback
    fabric            Fabric: the real program on the engine in lockstep with SwitchModel
    simswitch         SimulatedSwitch: worker threads meeting at a barrier (no packets at all)
    loopback          loopback_reducers: a whole job's ranks wired to a loopback switch
    reference_worker  JobRun: the worker algorithm of docs/protocol.md, transport-free
    lossy_net         LossyNetwork: loss, duplication and reordering between JobRuns and a switch
    training          offline experiments (convergence table) through these stand-ins
"""
