package io.vgpu.examples.lab.kubescheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.k8s.cli.UnavailableException;
import io.vgpu.k8s.pod.PodJson;
import org.junit.jupiter.api.Test;

/** The lab's reading of kube-scheduler's configuration. */
class KubeSchedulerConfigTest {
  @Test
  void theConfigurationsPercentageAppliesToProfilesWithoutTheirOwn() throws Exception {
    KubeSchedulerConfig config = KubeSchedulerConfig.of(PodJson.mapper().readTree("""
        {"percentageOfNodesToScore": 100,
         "profiles": [{"schedulerName": "hami-scheduler"}, {"schedulerName": "other", "percentageOfNodesToScore": 20}],
         "extenders": [{"urlPrefix": "https://127.0.0.1:1/x", "filterVerb": "filter", "bindVerb": "bind"}]}
        """));
    assertThat(config.percentageOfNodesToScore("hami-scheduler")).isEqualTo(100);
    assertThat(config.percentageOfNodesToScore("other")).isEqualTo(20);
    assertThat(config.percentageOfNodesToScore("absent")).isZero();
    assertThatThrownBy(() -> KubeSchedulerConfig.of(PodJson.mapper().readTree("""
        {"percentageOfNodesToScore": 101, "profiles": [{"schedulerName": "s"}],
         "extenders": [{"urlPrefix": "https://127.0.0.1:1/x", "filterVerb": "filter", "bindVerb": "bind"}]}
        """))).isInstanceOf(UnavailableException.class).hasMessage("the configuration: percentageOfNodesToScore 101 is not an integer from 0 to 100");
  }
}
