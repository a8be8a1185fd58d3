# %% [markdown]
# # AfterImage: judge scores by persona, and DPO pairs
#
# AfterImage generates conversations as personas and has a judge grade them (five
# criteria, an overall grade, a final score). The warehouse keeps each criterion
# as a row of `evaluations` (with its scale: 0-1 and 0-100 scores are never mixed)
# and the persona as a column of `responses`. The view `dpo_pairs` pairs the best
# answer to a conversation with each answer to it that got a worse grade.

# %%
import matplotlib.pyplot as plt
import polars as pl

from _common import heatmap, label, open_warehouse, save, show

wh = open_warehouse()

# %%
scores = wh.sql("""
    SELECT r.persona, e.criterion, e.score
    FROM evaluations e JOIN responses r USING (response_id)
    WHERE r.source_format = 'afterimage' AND e.score IS NOT NULL AND e.score_scale = '0-1'
""").pl()
by_persona = (
    scores.filter(pl.col("criterion") == "final_score")
    .group_by("persona").agg(pl.col("score").mean().alias("mean"), pl.len().alias("rows"))
    .sort("mean")
)
show(by_persona, "final score (0-1) by persona")

# %%
grades = wh.sql("""
    SELECT r.persona, g.overall_grade, g.grade_rank
    FROM response_grades g JOIN responses r USING (response_id)
""").pl()
show(grades.group_by("overall_grade", "grade_rank").len().sort("grade_rank"), "overall grades")

# %%
personas = by_persona["persona"].to_list()  # None: the rows that name no persona, a box of their own
names = [label(p) if p is not None else "(no persona)" for p in personas]  # whole words, on two lines at most
criteria = sorted(c for c in scores["criterion"].unique().to_list() if c != "final_score")
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(16, 1.5 + 0.6 * len(personas)),
                               gridspec_kw={"width_ratios": [1, 1.3], "wspace": 0.45})
final = scores.filter(pl.col("criterion") == "final_score")
# eq_missing: None matches the rows with no persona (== None matches no row at all)
ax1.boxplot([final.filter(pl.col("persona").eq_missing(p))["score"].to_list() for p in personas], orientation="horizontal")
ax1.set_yticks(range(1, len(personas) + 1), names, fontsize=8)
ax1.set_xlabel("final score (0-1)")
ax1.set_title("final score by persona")
means = scores.filter(pl.col("criterion") != "final_score").group_by("persona", "criterion").agg(pl.col("score").mean())
mean_of = {(r["persona"], r["criterion"]): r["score"] for r in means.iter_rows(named=True)}
# A persona never scored on a criterion has no cell value: None, drawn as "missing" (not as 0).
grid = [[mean_of.get((p, c)) for c in criteria] for p in personas]
im = heatmap(ax2, grid, names, criteria, vmin=0, vmax=1)  # rows bottom-up, as the boxes
ax2.set_title("mean criterion score by persona")
fig.colorbar(im, ax=ax2)
save(fig, "afterimage_scores_by_persona.png")

# %% [markdown]
# DPO pairs: the conversation's best answer is `chosen`, each worse-graded one `rejected`.

# %%
pairs = wh.read("dpo_pairs")
print(f"{pairs.height} pairs from {pairs['conversation_key'].n_unique()} conversations")
show(pairs.select("first_user_message", "chosen_grade", "rejected_grade", "chosen_response", "rejected_response").head(5))
