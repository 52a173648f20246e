"""The composer's pages, mounted at the site root."""

from __future__ import annotations

from django.urls import path

from composer.views import dashboard, jobs, managers, pools

app_name = "composer"
urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("pools/", pools.pool_list, name="pool_list"),
    path("pools/<slug:slug>/", pools.pool_detail, name="pool_detail"),
    path("jobs/", jobs.job_list, name="job_list"),
    path("jobs/<int:pk>/", jobs.job_detail, name="job_detail"),
    path("jobs/<int:pk>/progress/", jobs.job_progress, name="job_progress"),
    path("managers/<int:pk>/sync/", managers.manager_sync, name="manager_sync"),
]
