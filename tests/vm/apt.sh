# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# apt.sh: downloading Debian packages for the VM harness without touching
# the host's packages.  Sourced after kernels.sh's rc_kernel_info; needs
# $cache (the kernel cache), $KAPT and die().  KAPT=host uses the host's
# own apt sources; KAPT=trixie a separate configuration in
# $cache/apt-trixie/ (own sources list for trixie + trixie-backports, own
# lists, archive cache, preferences and an empty dpkg status), so apt never
# plans to upgrade or remove anything on the host.

# The mirror the host uses for Debian itself, so a proxy or local mirror
# configured there also serves the separate configuration.
rc_mirror()
{
	if [ -n "${RC_DEBIAN_MIRROR:-}" ]; then
		echo "$RC_DEBIAN_MIRROR"
		return
	fi
	# shellcheck disable=SC2016 # apt's own $(REPO_URI) field
	m=$(apt-get indextargets --format '$(REPO_URI)' 2>/dev/null |
		grep -v -e security -e '^$' | grep -i debian | head -n 1)
	echo "${m:-http://deb.debian.org/debian/}"
}

# shellcheck disable=SC2154 # cache: set by the script that sources this
aptdir=$cache/apt-trixie
rc_apt()
{
	if [ "$KAPT" = host ]; then
		apt-get -q -o APT::Sandbox::User=root "$@"
		return
	fi
	apt-get -q -o APT::Sandbox::User=root \
		-o Dir::Etc::SourceList="$aptdir/sources.list" \
		-o Dir::Etc::SourceParts="$aptdir/sources.list.d" \
		-o Dir::Etc::Preferences="$aptdir/preferences" \
		-o Dir::Etc::PreferencesParts="$aptdir/preferences.d" \
		-o Dir::State::Lists="$aptdir/lists" \
		-o Dir::State::status="$aptdir/status" \
		-o Dir::Cache="$aptdir/cache" \
		"$@"
}

rc_apt_setup()
{
	[ "$KAPT" = host ] && return 0
	mkdir -p "$aptdir/sources.list.d" "$aptdir/preferences.d" \
		"$aptdir/lists/partial" "$aptdir/cache/archives/partial"
	: >"$aptdir/preferences"
	[ -f "$aptdir/status" ] || : >"$aptdir/status"
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -f "$keyring" ] || die "$keyring missing (apt-get install debian-archive-keyring)"
	mirror=$(rc_mirror)
	cat >"$aptdir/sources.list.new" <<EOS
deb [signed-by=$keyring] $mirror trixie main
deb [signed-by=$keyring] $mirror trixie-backports main
EOS
	if ! cmp -s "$aptdir/sources.list.new" "$aptdir/sources.list"; then
		mv "$aptdir/sources.list.new" "$aptdir/sources.list"
		rm -f "$aptdir/updated"
	fi
	rm -f "$aptdir/sources.list.new"
	if [ ! -f "$aptdir/updated" ]; then
		echo "vm-kernel: apt-get update (trixie, trixie-backports) in $aptdir"
		rc_apt update || die "apt-get update for trixie/trixie-backports failed"
		touch "$aptdir/updated"
	fi
}

# rc_download DIR PKG...: apt-get download into DIR unless done before.
rc_download()
{
	d=$1
	shift
	[ "$(cat "$d/complete" 2>/dev/null)" = "$*" ] && return 0
	rc_apt_setup
	rm -rf "$d"
	mkdir -p "$d"
	echo "vm-kernel: downloading $*"
	if ! (cd "$d" && rc_apt download "$@"); then
		# Stale package lists name files the mirror no longer has.
		if [ "$KAPT" = host ]; then
			apt-get -q update || die "apt-get update failed"
		else
			rm -f "$aptdir/updated"
			rc_apt_setup
		fi
		(cd "$d" && rc_apt download "$@") ||
			die "apt-get download $* failed (no network or package gone from the archive?)"
	fi
	echo "$*" >"$d/complete"
}
