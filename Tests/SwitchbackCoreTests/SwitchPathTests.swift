@testable import SwitchbackCore
import Testing

/// `LaunchPlanner.switchPath`: the one decision, for both directions, of how a live switch goes.
@Suite struct SwitchPathTests {
    static func path(_ target: BuildSlot, floor: String? = nil, steps: [PendingStep]? = []) -> SwitchPath {
        LaunchPlanner.switchPath(target: target, targetVersion: target == .previous ? "1.1.9" : "1.2.0",
                                 servingVersion: target == .previous ? "1.2.0" : "1.1.9", dataFloor: floor, pendingSteps: steps)
    }

    @Test func backIsStopFirstWhenTheDataFloorIsAboveTheTarget() {
        #expect(Self.path(.previous, floor: "1.2.0") == .stopFirst(why: "the data (reader floor 1.2.0) must be converted back for 1.1.9"))
    }

    @Test(arguments: [nil, "1.1.9", "1.1.0", "1.1.9-rc.1"])
    func backIsStartFirstWhenTheTargetReadsTheData(_ floor: String?) {
        #expect(Self.path(.previous, floor: floor) == .startFirst)
    }

    @Test func forwardIsStopFirstWhenAStepsFloorIsAboveTheServingVersion() {
        let steps = [PendingStep(name: "add-index", version: "1.2.0", readerFloor: "1.0.0"),
                     PendingStep(name: "notes-v2", version: "1.2.0", readerFloor: "1.2.0")]
        #expect(Self.path(.current, steps: steps) == .stopFirst(why: "1.2.0 migrates notes-v2, which 1.1.9 cannot read"))
    }

    @Test func forwardIsStartFirstWhenEveryStepIsReadableByTheServingBuild() {
        let steps = [PendingStep(name: "expand", version: "1.2.0", readerFloor: "1.1.9"),
                     PendingStep(name: "older", version: "1.2.0", readerFloor: "1.0.0")]
        #expect(Self.path(.current, steps: steps) == .startFirst)
        #expect(Self.path(.current, steps: []) == .startFirst)
    }

    @Test func aTargetThatCannotSayIsStopFirst() {
        #expect(Self.path(.current, steps: nil) == .stopFirst(why: "1.2.0 cannot say which data steps it runs at its start"))
    }

    @Test func theBackDecisionIgnoresPendingStepsAndTheForwardOneTheFloor() {
        #expect(Self.path(.previous, floor: nil, steps: nil) == .startFirst)
        #expect(Self.path(.current, floor: "9.9.9", steps: []) == .startFirst)
    }

    @Test func namesThePathAsStatusShowsIt() {
        #expect(SwitchPath.startFirst.name == "start-first")
        #expect(SwitchPath.stopFirst(why: "x").name == "stop-first")
    }
}
