package io.vgpu.nvidia;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** HAMi's DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS rules, case by case as rm/health.go has them. */
class XidHealthPolicyTest {

  @Test
  void byDefaultEveryXidButTheApplicationErrorsIsCritical() {
    XidHealthPolicy policy = XidHealthPolicy.defaults();
    assertThat(policy.checksDisabled()).isFalse();
    for (long xid : new long[] {13, 31, 43, 45, 68, 109}) {
      assertThat(policy.marksUnhealthy(xid)).as("Xid %d", xid).isFalse();
    }
    for (long xid : new long[] {1, 48, 63, 64, 74, 79, 92, 94, 95, 119}) {
      assertThat(policy.marksUnhealthy(xid)).as("Xid %d", xid).isTrue();
    }
  }

  @Test
  void disabledXidsAreIgnoredAndEnabledOnesWinOverEveryIgnoreList() {
    XidHealthPolicy policy = XidHealthPolicy.fromEnvironment(Map.of("DP_DISABLE_HEALTHCHECKS", " 48, 79 ,", "DP_ENABLE_HEALTHCHECKS", "79,31"));
    assertThat(policy.marksUnhealthy(48)).isFalse();
    assertThat(policy.marksUnhealthy(79)).as("enabled beats disabled").isTrue();
    assertThat(policy.marksUnhealthy(31)).as("enabled beats the default ignore list").isTrue();
    assertThat(policy.marksUnhealthy(13)).isFalse();
    assertThat(policy.marksUnhealthy(94)).isTrue();
  }

  @Test
  void allOrXidsSwitchTheCheckOffEvenWithEnabledXidsAsInHami() {
    for (String all : new String[] {"all", "XIDS", "48,all"}) {
      XidHealthPolicy policy = XidHealthPolicy.of(all, "48");
      assertThat(policy.checksDisabled()).as(all).isTrue();
      assertThat(policy.marksUnhealthy(94)).as(all).isFalse();
      assertThat(policy.marksUnhealthy(48)).as("%s: the explicit entry still answers", all).isTrue();
    }
  }

  @Test
  void enableAllMakesEveryXidCriticalTheIgnoredOnesToo() {
    XidHealthPolicy policy = XidHealthPolicy.of("", "all");
    assertThat(policy.checksDisabled()).isFalse();
    assertThat(policy.marksUnhealthy(13)).isTrue();
    assertThat(policy.marksUnhealthy(109)).isTrue();
  }

  @Test
  void anEntryThatIsNotAnXidIsAnErrorNamingTheVariable() {
    assertThatThrownBy(() -> XidHealthPolicy.of("48,ecc", ""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("DP_DISABLE_HEALTHCHECKS='48,ecc': 'ecc' is not an Xid (a number, all or xids)");
    assertThatThrownBy(() -> XidHealthPolicy.of("", "-1")).hasMessageStartingWith("DP_ENABLE_HEALTHCHECKS='-1'");
  }
}
