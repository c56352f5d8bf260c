#!/usr/bin/env bash
# api180-rename.sh rewrites a Go tree written against the API before issue 29
# item 6's "at most 180 exported identifiers" (branch api180) to the API
# after it: triage's report types moved to triage/report, redrive's plain
# result types and refusal codes to redrive/redrivetype. For the lead, to
# apply to a branch before merging it; delete it once every branch is in.
#
#	scripts/dev/api180-rename.sh [DIR]   (default: the repository root)
#
# It rewrites qualified names (triage.Report -> report.Report), the
# unqualified names inside packages triage and redrive themselves
# (Report -> report.Report), g.Letters() -> g.Letters, adds the new imports,
# drops imports left unused, and runs gofmt. Comments and strings are left as
# they are. What it cannot see (a local variable named report or redrivetype
# in a file that now needs the package) the build then names.
set -euo pipefail
root=${1:-$(git rev-parse --show-toplevel)}
mod=github.com/agentdlq/agentdlq
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The moved names, by old package.
triage_ids='Report|Totals|ReasonTotal|Group|ExportResult|ExpirySummary|ExpiringMessage|Entry|ScanStats|ClockBasis|ClockOriginalSend|ClockWorkerSend|ClockFIFOReset|ClockUnknown|Filter|Filtered|FilterFields|Message|Tagged|Hints'
redrive_ids='ClaimCheckCause|ClaimCheckMissing|ClaimCheckNoBucket|ClaimCheckNoClient|ClaimCheckNotClaimCheck|ClaimCheckOtherBucket|ClaimCheckOtherMessage|ClaimCheckOutsidePrefix|ClaimCheckTooLarge|ClaimCheckUnreadable|Code|CodeAmbiguousGroup|CodeBadInput|CodeDLQEmpty|CodeDLQMissing|CodeDestination|CodeForbidden|CodeIdentity|CodeLetterNotFound|CodeNoMapping|CodeNoTask|CodeNotEffectUnknown|CodeNotSettled|CodeNothingSelected|CodeOwner|CodeOwnerMissing|CodeOwnerTag|CodeRate|CodeReconciled|CodeRepairInvalid|CodeSTSEndpoint|CodeScanPartial|CodeTaskActive|CodeUnknownGroup|CodeUnknownReason|CodeWhy|Decisions|KeyDecision|MoveTask|PauseResult|Plan|PlanGroup|RejectResult|RepairResult|Step|Unrestored|Verdict|Verified|VerifyResult'

# qualify.pl OLD NEW IDS: OLD.X -> NEW.X for X in IDS, in code (not comments, not strings).
cat >"$work/qualify.pl" <<'PERL'
BEGIN { ($old, $new, $ids, $bare) = splice(@ARGV, 0, 4); }
if (/^\s*\/\//) { print; next; }
my ($code, $cmt) = ($_, "");
if ($code =~ /^(.*?)(\s\/\/.*)$/s && $1 !~ /"[^"]*$/ && $1 !~ /`/) { ($code, $cmt) = ($1, $2); }
my @parts = split /("(?:[^"\\]|\\.)*"|`[^`]*`)/, $code;
for (my $i = 0; $i < @parts; $i += 2) {
  if ($bare) {
    # inside the old package: a bare name, not a field, not a key, not a field's name
    $parts[$i] =~ s/(?<![\w.])($ids)\b(?!\s*:[^=])/$new.$1/g;
    # constants as map keys (not a struct's field names: those are not in ids)
    $parts[$i] =~ s/(?<![\w.])((?:Code|ClaimCheck|Clock)[A-Z]\w*)\b(?=\s*:[^=])/my $n = $1; ($n =~ m{^(?:$ids)$}) ? "$new.$n" : $n/ge;
    $parts[$i] =~ s/^(\t+)$new\.(\w+)([ \t]+)(?=[^\s\/])/$1$2$3/;
    $parts[$i] =~ s/^(func \([^)]*\) )$new\.(\w+)\(/$1$2(/;
    $parts[$i] =~ s/^(\t+)$new\.(\w+)\(/$1$2(/ if $old eq "redrive" && /^\t+\w+\(ctx/;
    $parts[$i] =~ s/(?<![\w.])decision\b(?!\s*:[^=])/redrivetype.Decision/g if $old eq "redrive";
    if ($old eq "redrive") { # the moved types' unexported methods, now functions
      $parts[$i] =~ s/\b([\w.]+)\.rejection\(/rejection($1, /g;
      $parts[$i] =~ s/\b([\w.]+(?:\[\w+\])?)\.progress\(\)/progress($1)/g;
      $parts[$i] =~ s/\b([\w.]+)\.narrowed\(/narrowPlan($1, /g;
      $parts[$i] =~ s/\b([\w.]+)\.annotate\(/markDecisions($1, /g;
    }
    $parts[$i] =~ s/\.tagged\b/.Letters/g if $old eq "triage";
  } else {
    $parts[$i] =~ s/(?<![\w.])$old\.($ids)\b/$new.$1/g;
  }
  $parts[$i] =~ s/\.Letters\(\)/.Letters/g;
}
print join("", @parts) . $cmt;
PERL

# imports.pl NAME PATH: add import PATH where the code uses NAME. and lacks it;
# drop the import of OLDPATH (named OLD) where the code no longer uses OLD.
cat >"$work/imports.pl" <<'PERL'
BEGIN { ($name, $path, $old, $oldpath) = splice(@ARGV, 0, 4); }
my $code = $_; $code =~ s{"(?:[^"\\\n]|\\.)*"|`[^`]*`|//[^\n]*|/\*.*?\*/}{""}gs;
if ($code =~ /(?<![\w.])\Q$name\E\.[A-Z]/ && !/"\Q$path\E"/) {
  if (/^import \(\n/m) { s/^import \(\n(.*?)^\)/import (\n$1\t"$path"\n)/ms; }
  elsif (/^import ("[^"]+")\n/m) { s/^import ("[^"]+")\n/import (\n\t$1\n\t"$path"\n)\n/m; }
  else { s/^(package \w+\n)/$1\nimport "$path"\n/m; }
}
if ($code !~ /(?<![\w.])\Q$old\E\.[A-Za-z]/) {
  s/^\t"\Q$oldpath\E"\n//m;
  s/^import "\Q$oldpath\E"\n//m;
}
print;
PERL

mapfile -t files < <(find "$root" -name '*.go' -not -path '*/node_modules/*' -not -path '*/.git/*' -not -path '*/cdk.out/*' -not -path '*/scripts/dev/*')
rename() { # OLD OLDPATH NEW NEWPATH IDS
  local old=$1 oldpath=$2 new=$3 newpath=$4 ids=$5 f
  [ -n "$ids" ] || return 0
  for f in "${files[@]}"; do
    local bare=0
    if grep -q "^package $old\$" "$f" && [ "$(dirname "$f")" = "$root/${oldpath#"$mod"/}" ]; then bare=1; fi
    if [ $bare = 1 ] || grep -q "\"$oldpath\"" "$f"; then
      perl -n -i "$work/qualify.pl" "$old" "$new" "$ids" "$bare" "$f"
      perl -0777 -n -i "$work/imports.pl" "$new" "$newpath" "$old" "$oldpath" "$f"
    fi
  done
}
rename triage "$mod/triage" report "$mod/triage/report" "$triage_ids"
rename redrive "$mod/redrive" redrivetype "$mod/redrive/redrivetype" "$redrive_ids"
# cmd/agentdlq's func report would clash with the import of triage/report.
for f in "$root"/cmd/agentdlq/*.go; do
  [ -e "$f" ] && perl -pi -e 's/(?<![\w.])report\(/reportExit(/g; s/^\/\/ report prints err/\/\/ reportExit prints err/' "$f"
done
gofmt -w "${files[@]}"
