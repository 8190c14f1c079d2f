package io.vgpu.examples.lab.checks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.yaml.InputException;
import io.vgpu.k8s.yaml.YamlList;
import io.vgpu.k8s.yaml.YamlMap;
import io.vgpu.k8s.yaml.YamlReader;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** The checks of lab scenarios: paths into a report, each operator, and bad checks as one-line errors. */
class CheckTest {
  private static final JsonNode REPORT =
      PodJson.mapper().readTree(
          """
          {"pods": [{"namespace": "hami-tests", "name": "smoke", "phase": "Running", "node": "w1",
                     "annotations": {"hami.io/vgpu-devices-allocated": "GPU-0,NVIDIA,4096,25:;"},
                     "containers": [{"name": "gpu", "devices": [{"uuid": "GPU-0", "memoryMiB": 4096, "cores": 25}],
                                     "observed": [{"op": "alloc", "sizeMiB": 3000, "result": 0},
                                                  {"op": "alloc", "sizeMiB": 2000, "result": 2},
                                                  {"op": "compute", "utilizationPercent": 24.6}]}]},
                    {"namespace": "default", "name": "other", "phase": "Pending"}],
           "nodes": [{"name": "w1", "devices": [{"uuid": "GPU-0", "memoryMiB": 40960, "sharers": 1}]}],
           "events": [{"object": "default/other", "reason": "FailedScheduling", "message": "0/1 nodes are available", "count": 2}],
           "metrics": {"scheduler": {"hami_gpu_memory_allocated_bytes{device_uuid=\\"GPU-0\\",node=\\"w1\\",zone=\\"vGPU\\"}": 4294967296,
                                     "hami_gpu_memory_allocated_bytes{device_uuid=\\"GPU-1\\",node=\\"w1\\",zone=\\"vGPU\\"}": 0}},
           "timeline": [{"step": 0, "event": "create hami-tests/smoke", "scheduled": ["hami-tests/smoke"]}]}
          """);

  private static List<Check> parse(String yaml) {
    YamlMap root = YamlReader.read(yaml, "s.yaml").asMap("scenario");
    return Check.parse((YamlList) root.get("checks").orElseThrow());
  }

  /** Evaluates one check written in flow style with its path quoted: {@code {name: a, path: 'x[0]', equals: 1}}. */
  private static Check.Result evaluate(String check) {
    return parse("checks:\n  - " + quotePath(check) + "\n").get(0).evaluate(REPORT);
  }

  /** Paths hold '[' and ',', which YAML's flow style reads as syntax unless the path is quoted. */
  private static String quotePath(String check) {
    int start = check.indexOf("path: ") + "path: ".length();
    if (check.charAt(start) == '\'') {
      return check;
    }
    int end = check.indexOf(", ", start);
    while (check.substring(start, end).chars().filter(c -> c == '[').count() != check.substring(start, end).chars().filter(c -> c == ']').count()) {
      end = check.indexOf(", ", end + 1);
    }
    return check.substring(0, start) + "'" + check.substring(start, end) + "'" + check.substring(end);
  }

  @Test
  void pathsNameElementsByIdentityIndexFilterAndMetricLabels() {
    assertThat(evaluate("{name: a, path: pods[hami-tests/smoke].phase, equals: Running}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: pods[hami-tests/smoke].containers[gpu].observed[1].result, equals: 2}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: pods[hami-tests/smoke].containers[gpu].observed[-1].op, equals: compute}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: 'pods[hami-tests/smoke].containers[gpu].observed[op=alloc,result=2]', count: 1}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: nodes[w1].devices[GPU-0], equals: {memoryMiB: 40960, sharers: 1}}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: 'pods[hami-tests/smoke].annotations[hami.io/vgpu-devices-allocated]', equals: 'GPU-0,NVIDIA,4096,25:;'}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: 'metrics.scheduler[hami_gpu_memory_allocated_bytes{device_uuid=\"GPU-0\"}]', equals: 4294967296}").passed()).isTrue();
  }

  @Test
  void aMetricNamedByLabelsThatSeveralSamplesHaveIsNotFound() {
    Check.Result r = evaluate("{name: a, path: 'metrics.scheduler[hami_gpu_memory_allocated_bytes{node=\"w1\"}]', equals: 0}");
    assertThat(r.passed()).isFalse();
    assertThat(r.observed()).startsWith("(metrics.scheduler has no [hami_gpu_memory_allocated_bytes{node=\"w1\"}]");
  }

  @Test
  void eachOperatorDecidesAndSaysWhatItExpected() {
    assertThat(evaluate("{name: a, path: pods[hami-tests/smoke].phase, notEquals: Pending}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: pods[hami-tests/smoke].containers[gpu].observed[2].utilizationPercent, between: [22, 28]}"))
        .extracting(Check.Result::passed, Check.Result::expected, Check.Result::observed)
        .containsExactly(true, "22 … 28", "24.6");
    assertThat(evaluate("{name: a, path: pods[hami-tests/smoke].containers[gpu].observed[2].utilizationPercent, atLeast: 25}").passed()).isFalse();
    assertThat(evaluate("{name: a, path: pods[hami-tests/smoke].containers[gpu].observed[2].utilizationPercent, atMost: 25}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: 'events[object=default/other,reason=FailedScheduling]', atLeast: 1}"))
        .extracting(Check.Result::passed, Check.Result::observed).containsExactly(true, "1 item(s)");
    assertThat(evaluate("{name: a, path: 'events[object=default/other][0].message', contains: 'nodes are available'}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: timeline[0].scheduled, contains: hami-tests/smoke}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: timeline[0].scheduled, notContains: default/other}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: pods[hami-tests/smoke].node, matches: 'w[0-9]'}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: pods[default/other].node, exists: false}").passed()).isTrue();
    assertThat(evaluate("{name: a, path: pods[default/other].phase, sameAs: 'pods[hami-tests/smoke].phase'}"))
        .extracting(Check.Result::passed, Check.Result::observed).containsExactly(false, "Pending vs Running");
    assertThat(evaluate("{name: a, path: pods[default/other].phase, differentFrom: 'pods[hami-tests/smoke].phase'}").passed()).isTrue();
  }

  @Test
  void aMissingPathFailsAndSaysWhereItStopped() {
    Check.Result r = evaluate("{name: a, path: pods[hami-tests/gone].phase, equals: Running}");
    assertThat(r.passed()).isFalse();
    assertThat(r.observed()).isEqualTo("(pods has no [hami-tests/gone])");
  }

  @Test
  void badChecksAreOneLineErrorsWithTheirPosition() {
    assertThatThrownBy(() -> parse("checks:\n  - {name: a, path: x, equals: 1, atLeast: 2}\n"))
        .isInstanceOf(InputException.class)
        .hasMessage("s.yaml:2:5: checks[0]: a check has exactly one of equals, notEquals, sameAs, differentFrom, atLeast, atMost, between, count, contains, notContains, matches, exists");
    assertThatThrownBy(() -> parse("checks:\n  - {name: a, path: 'x[1', equals: 1}\n"))
        .isInstanceOf(InputException.class).hasMessage("s.yaml:2:21: checks[0].path: unclosed '[' at character 2");
    assertThatThrownBy(() -> parse("checks:\n  - {name: a, path: x, between: [1]}\n"))
        .isInstanceOf(InputException.class).hasMessage("s.yaml:2:33: checks[0].between: '[1]' is not a valid operand ([low, high])");
    assertThatThrownBy(() -> parse("checks:\n  - {name: a, path: x, matches: '('}\n"))
        .isInstanceOf(InputException.class).hasMessage("s.yaml:2:33: checks[0].matches: '\"(\"' is not a valid operand (a regular expression)");
    assertThatThrownBy(() -> parse("checks:\n  - {name: a, path: x, equal: 1}\n"))
        .isInstanceOf(InputException.class).hasMessageStartingWith("s.yaml:2:24: unknown key 'equal' in checks[0] (known keys: name, path, equals,");
  }
}
